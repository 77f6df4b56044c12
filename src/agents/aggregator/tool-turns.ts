import { ActionReturn } from '../../schema/action-return';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { deepClone } from '../../utils/clone';
import { isPlainObject } from '../../utils/is';
import { toText } from '../../utils/text';
import { contentToText } from './content';

/** The content of the `tool` message that stands in for a call that got no result. */
export const NOT_RUN_TEXT = 'This tool call was not run, so it has no result.';

/** A call's arguments as a chat message carries them: a JSON object, or text. */
function chatArguments(value: unknown): Record<string, unknown> | string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return {};
  if (isPlainObject(value)) return deepClone(value);
  return toText(value);
}

/** A result as the text a `tool` message carries. */
function resultText(result: unknown): string {
  return result instanceof ActionReturn ? result.toText() : contentToText(result);
}

/**
 * Renders native tool-call turns so that the history stays valid for the OpenAI API: each call of the
 * agent's tool-call message is answered by exactly one `tool` message, right after it and before any other
 * message. A call whose result never came gets a `tool` message saying it was not run; a second result for
 * an id is dropped; a result whose call is not in the agent's last tool-call message (nothing waits for it:
 * the message was given to another agent, or the call was cut off by a memory window) is shown as user
 * text (`Result of name: ...`), since a `tool` message without its call is refused by the API.
 *
 * One instance serves one `aggregate` call; `out` is the list being built.
 */
export class ToolTurns {
  readonly #out: ChatMessage[];
  /** The calls of the last assistant tool-call message still waiting for a result: id -> name. */
  #waiting: Map<string, string> | null = null;
  /** Every id answered so far (or given up on), so that later results for it are dropped. */
  #answered: Set<string> | null = null;

  constructor(out: ChatMessage[]) {
    this.#out = out;
  }

  /** Whether calls are waiting for results (so any other message must close them first). */
  get isWaiting(): boolean {
    return this.#waiting !== null;
  }

  /** The agent's own tool-call message: an assistant message with the calls (one per id). */
  addCalls(content: unknown, calls: readonly ToolCall[]): void {
    this.close();
    const waiting = new Map<string, string>();
    const toolCalls: ToolCall[] = [];
    for (const call of calls) {
      if (waiting.has(call.id)) continue;
      waiting.set(call.id, call.name);
      toolCalls.push({ id: call.id, name: call.name, arguments: chatArguments(call.arguments) });
    }
    const text = contentToText(content);
    this.#out.push({ role: 'assistant', content: text === '' ? null : text, toolCalls });
    this.#waiting = waiting;
  }

  /**
   * Another sender's message answering `calls` (an executor's reply: `content[i]` answers `calls[i]`; a
   * single call may be answered by any content). Returns the text to show as a user message for results
   * nothing waits for ('' when there is none), or `null` when the message does not answer these calls
   * at all and is an ordinary message.
   */
  addResults(content: unknown, calls: readonly ToolCall[]): string | null {
    const results: readonly unknown[] | null = Array.isArray(content)
      ? content
      : calls.length === 1
        ? [content]
        : null;
    if (!results) return null;
    const waiting = this.#waiting;
    if (!Array.isArray(content) && !waiting?.has(calls[0]!.id)) return null;
    let orphans = '';
    const count = Math.min(results.length, calls.length);
    for (let i = 0; i < count; i++) {
      const { id, name } = calls[i]!;
      const calledAs = waiting?.get(id);
      if (calledAs !== undefined) {
        waiting!.delete(id);
        this.#markAnswered(id);
        this.#out.push({ role: 'tool', toolCallId: id, name: calledAs, content: resultText(results[i]) });
      } else if (!this.#answered?.has(id)) {
        orphans += `${orphans ? '\n' : ''}Result of ${name}: ${resultText(results[i])}`;
      }
    }
    if (waiting?.size === 0) this.#waiting = null;
    return orphans;
  }

  #markAnswered(id: string): void {
    if (this.#answered === null) this.#answered = new Set();
    this.#answered.add(id);
  }

  /** Ends the waiting calls: each one without a result gets a `tool` message saying it was not run. */
  close(): void {
    const waiting = this.#waiting;
    if (waiting === null) return;
    this.#waiting = null;
    for (const [id, name] of waiting) {
      this.#markAnswered(id);
      this.#out.push({ role: 'tool', toolCallId: id, name, content: NOT_RUN_TEXT });
    }
  }
}
