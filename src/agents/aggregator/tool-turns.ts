import { ActionReturn } from '../../schema/action-return';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { ActionStatusCode } from '../../schema/status';
import { deepClone } from '../../utils/clone';
import { isPlainObject } from '../../utils/is';
import { toText } from '../../utils/text';
import { contentToText } from './content';
import { withReasoning } from './reasoning';

/** The content of the `tool` message that stands in for a call that got no result. */
export const NOT_RUN_TEXT = 'This tool call was not run, so it has no result.';

/** What a `tool` message says first when a person edited the call's arguments before approving it. */
export const EDITED_TEXT =
  'The user edited the arguments of this call before approving it; it ran with the arguments shown.';

/** A call's arguments as a chat message carries them: a fresh JSON object, or text. */
function chatArguments(value: unknown): Record<string, unknown> | string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) return toText(value);
  // Most arguments are flat: a spread copies them at a fraction of a deep copy's cost.
  for (const key in value) {
    const item = value[key];
    if (item !== null && typeof item === 'object') return deepClone(value);
  }
  return { ...value };
}

/** A result as the text a `tool` message carries ({@link ActionReturn.toText}, one text item read directly). */
function resultText(result: unknown): string {
  if (!(result instanceof ActionReturn)) return contentToText(result);
  const items = result.result;
  if (result.state === ActionStatusCode.SUCCESS && items?.length === 1) {
    const item = items[0];
    if (item?.type === 'text' && typeof item.content === 'string') return item.content;
  }
  return result.toText();
}

/** The `image` items of a result (paths or `data:` URLs), or undefined when it has none. */
function imagesOf(result: ActionReturn): string[] | undefined {
  const items = result.result;
  if (!Array.isArray(items)) return undefined;
  const images: string[] = [];
  for (const item of items) {
    if (item?.type === 'image' && typeof item.content === 'string' && item.content !== '') {
      images.push(item.content);
    }
  }
  return images.length > 0 ? images : undefined;
}

/**
 * Renders native tool-call turns so that the history stays valid for the OpenAI API: each call of the
 * agent's tool-call message is answered by exactly one `tool` message, right after it and before any other
 * message. A failed call's `tool` message has `isError`, and a result's `image` items are its `images` (for
 * clients of models that take images). A call whose result never came gets a `tool` message saying it was
 * not run; a second result for
 * an id is dropped; a result whose call is not in the agent's last tool-call message (nothing waits for it:
 * the message was given to another agent, or the call was cut off by a memory window) is shown as user
 * text (`Result of name: ...`), since a `tool` message without its call is refused by the API.
 *
 * One instance serves one `aggregate` call; `out` is the list being built.
 */
export class ToolTurns {
  readonly #out: ChatMessage[];
  /** The calls of the last assistant tool-call message, while some still wait for a result. */
  #calls: ToolCall[] | null = null;
  /** Which of them are answered: bit `i` for call `i` (calls past the 30th in `#answeredBeyond`). */
  #answeredMask = 0;
  #answeredBeyond: boolean[] | null = null;
  #waitingCount = 0;
  /** Ids answered (or given up on) so far; built only once a result nothing waits for shows up. */
  #answered: Set<string> | null = null;

  constructor(out: ChatMessage[]) {
    this.#out = out;
  }

  /** The agent's own tool-call message: an assistant message with the calls (one per id). */
  addCalls(content: unknown, calls: readonly ToolCall[], extraInfo: unknown = null): void {
    this.close();
    const toolCalls: ToolCall[] = [];
    for (const call of calls) {
      if (indexOfCall(toolCalls, call.id) !== -1) continue;
      toolCalls.push({ id: call.id, name: call.name, arguments: chatArguments(call.arguments) });
    }
    const text = contentToText(content);
    const turn: ChatMessage = { role: 'assistant', content: text === '' ? null : text, toolCalls };
    // The reasoning that led to the calls: a provider may need it back (Claude's signed thinking blocks).
    if (extraInfo !== null) withReasoning(turn, extraInfo);
    this.#out.push(turn);
    this.#calls = toolCalls;
    this.#answeredMask = 0;
    this.#answeredBeyond = null;
    this.#waitingCount = toolCalls.length;
  }

  /**
   * Another sender's message answering `calls` (an executor's reply: `content[i]` answers `calls[i]`; a
   * single call may be answered by any content). Returns the text to show as a user message for results
   * nothing waits for ('' when there is none), or `null` when the message does not answer these calls
   * at all and is an ordinary message.
   */
  addResults(content: unknown, calls: readonly ToolCall[]): string | null {
    if (!Array.isArray(content)) {
      const at = calls.length === 1 ? this.#waitingIndex(calls[0]!.id) : -1;
      if (at === -1) return null;
      this.#answer(at, content);
      return '';
    }
    let orphans = '';
    const count = Math.min(content.length, calls.length);
    for (let i = 0; i < count; i++) {
      const call = calls[i]!;
      const at = this.#waitingIndex(call.id);
      if (at !== -1) this.#answer(at, content[i], call.edited === true ? call : undefined);
      else if (!this.#wasAnswered(call.id)) {
        orphans += `${orphans ? '\n' : ''}Result of ${call.name}: ${resultText(content[i])}`;
      }
    }
    return orphans;
  }

  /** Ends the waiting calls: each one without a result gets a `tool` message saying it was not run. */
  close(): void {
    const calls = this.#calls;
    if (calls === null) return;
    for (let at = 0; at < calls.length; at++) {
      if (!this.#isAnswered(at)) this.#answer(at, undefined);
    }
    this.#calls = null;
  }

  /** Where the call `id` is among the waiting calls, or -1 when it is not waiting. */
  #waitingIndex(id: string): number {
    const calls = this.#calls;
    if (calls === null) return -1;
    const at = indexOfCall(calls, id);
    return at === -1 || this.#isAnswered(at) ? -1 : at;
  }

  #isAnswered(at: number): boolean {
    return at < 30 ? (this.#answeredMask & (1 << at)) !== 0 : this.#answeredBeyond?.[at] === true;
  }

  /**
   * Writes the `tool` message of call `at` (`undefined`: it was not run); the turn ends when none is left.
   * With `edited` (the call as it ran, its arguments edited by a person), the assistant's call shows the
   * arguments it ran with, and the result says a person edited them.
   */
  #answer(at: number, result: unknown, edited?: ToolCall): void {
    let call = this.#calls![at]!;
    if (edited !== undefined) {
      call = { id: call.id, name: call.name, arguments: chatArguments(edited.arguments) };
      this.#calls![at] = call;
    }
    const text = result === undefined ? NOT_RUN_TEXT : resultText(result);
    const message: ChatMessage = {
      role: 'tool',
      toolCallId: call.id,
      name: call.name,
      content: edited === undefined ? text : `${EDITED_TEXT}\n${text}`,
    };
    if (result instanceof ActionReturn) {
      if (result.state !== ActionStatusCode.SUCCESS) message.isError = true;
      const images = imagesOf(result);
      if (images !== undefined) message.images = images;
    }
    this.#out.push(message);
    this.#answered?.add(call.id);
    if (at < 30) this.#answeredMask |= 1 << at;
    else {
      this.#answeredBeyond ??= [];
      this.#answeredBeyond[at] = true;
    }
    this.#waitingCount--;
    if (this.#waitingCount === 0) this.#calls = null;
  }

  /** Whether a tool message for `id` was already written (a later result for it is a duplicate). */
  #wasAnswered(id: string): boolean {
    if (this.#answered === null) {
      this.#answered = new Set();
      for (const message of this.#out) {
        if (message.role === 'tool' && message.toolCallId !== undefined)
          this.#answered.add(message.toolCallId);
      }
    }
    return this.#answered.has(id);
  }
}

function indexOfCall(calls: readonly ToolCall[], id: string): number {
  for (let at = 0; at < calls.length; at++) if (calls[at]!.id === id) return at;
  return -1;
}
