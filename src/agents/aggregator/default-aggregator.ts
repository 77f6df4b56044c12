import { type Memory, RECENT } from '../../memory/memory';
import type { OutputParser } from '../../prompts/output-parser';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage } from '../../schema/chat-message';
import { type ContentPart, isContentParts } from '../../schema/content-parts';
import { ConfigurationError } from '../../schema/errors';
import { toolCallsOf } from '../../schema/tool-calls';
import { withRoom } from '../../utils/arrays';
import { contentToText } from './content';
import { withReasoning } from './reasoning';
import { ToolTurns } from './tool-turns';

/** Something that renders to the system prompt text, such as a `PromptTemplate`. */
export interface SystemTemplate {
  format(variables?: Record<string, unknown>): string;
}

/** An agent's system instruction: text, one chat message, several, or a template. */
export type SystemInstruction = string | ChatMessage | readonly ChatMessage[] | SystemTemplate;

const NO_MESSAGES: readonly ChatMessage[] = [];

/**
 * Turns a session's memory into chat messages: the system instruction first, then the agent's own turns
 * as `assistant` and everything else as `user` (consecutive user turns joined). Never mutates its inputs.
 *
 * Native tool calls become OpenAI's shape, and the history is always one the API accepts: the agent's
 * tool-call reply (`formatted: { toolCalls }`) is an `assistant` message with `toolCalls` (content `null`
 * when it has no text), and an executor's answer is one `tool` message per call (`toolCallId`, `name`,
 * the result's text), right after it. A call that got no result (the loop stopped, a call failed, a
 * message was deleted) is answered with a `tool` message saying it was not run; a second result for the
 * same id is dropped; a result whose call is not in the agent's last tool-call message becomes user text
 * (`Result of name: ...`).
 *
 * @example
 * class FewShotAggregator extends DefaultAggregator {
 *   override aggregate(memory, name, parser, system) {
 *     const [head, ...rest] = super.aggregate(memory, name, parser, system);
 *     return [head!, ...this.fewShot, ...rest];
 *   }
 * }
 */
export class DefaultAggregator {
  aggregate(
    memory: Memory | undefined,
    name: string,
    parser?: OutputParser,
    systemInstruction?: SystemInstruction,
  ): ChatMessage[] {
    if (!memory) return this.aggregateSystemInstruction(systemInstruction, parser);
    const history = memory[RECENT]();
    // Usually one message per turn at most: room for that, so the prompt is allocated once. A plain
    // text instruction (with the method not overridden) goes straight in, without a list of its own.
    let out: ChatMessage[];
    if (
      typeof systemInstruction === 'string' &&
      systemInstruction !== '' &&
      this.aggregateSystemInstruction === DefaultAggregator.prototype.aggregateSystemInstruction
    ) {
      out = withRoom(NO_MESSAGES, history.length + 1);
      out.push({ role: 'system', content: systemInstruction });
    } else out = withRoom(this.aggregateSystemInstruction(systemInstruction, parser), history.length);
    appendHistory(out, history, name, 0);
    return out;
  }

  /** The system instruction as fresh chat messages (empty when there is none). */
  aggregateSystemInstruction(
    instruction: SystemInstruction | undefined,
    _parser?: OutputParser,
  ): ChatMessage[] {
    if (instruction === undefined || instruction === null || instruction === '') return [];
    if (typeof instruction === 'string') return [{ role: 'system', content: instruction }];
    if (Array.isArray(instruction)) return instruction.map((message) => copyChatMessage(message));
    if (typeof (instruction as SystemTemplate).format === 'function') {
      return [{ role: 'system', content: (instruction as SystemTemplate).format() }];
    }
    return [copyChatMessage(instruction as ChatMessage)];
  }
}

/**
 * Renders `history[from..to)` as {@link DefaultAggregator} does, appending to `out` (the agent's own turns as
 * `assistant`, others as `user` joined when consecutive, native tool turns through {@link ToolTurns}).
 */
export function appendHistory(
  out: ChatMessage[],
  history: readonly AgentMessage[],
  name: string,
  from: number,
  to: number = history.length,
): void {
  let tools: ToolTurns | undefined;
  for (let i = from; i < to; i++) {
    const message = history[i]!;
    const calls = toolCallsOf(message.formatted);
    let text: string;
    if (message.sender === name) {
      if (calls) {
        tools ??= new ToolTurns(out);
        tools.addCalls(message.content, calls, message.extraInfo);
        continue;
      }
      tools?.close();
      const reply: ChatMessage = { role: 'assistant', content: contentToText(message.content) };
      if (message.extraInfo !== null) withReasoning(reply, message.extraInfo);
      out.push(reply);
      continue;
    }
    const content = message.content;
    let parts: ContentPart[] | undefined;
    if (calls) {
      tools ??= new ToolTurns(out);
      const orphans = tools.addResults(content, calls);
      if (orphans === '') continue;
      text = orphans ?? contentToText(content);
    } else {
      text = contentToText(content);
      if (Array.isArray(content) && isContentParts(content)) parts = content;
    }
    tools?.close();
    const last = out[out.length - 1];
    // `out` holds only fresh objects, so extending the last one in place is safe.
    if (last !== undefined && last.role === 'user') {
      if (parts !== undefined || last.parts !== undefined) {
        last.parts = [
          ...(last.parts ?? [{ type: 'text', text: last.content ?? '' }]),
          ...(parts ?? [{ type: 'text' as const, text }]),
        ];
      }
      last.content += text;
    } else if (parts !== undefined) out.push({ role: 'user', content: text, parts });
    else out.push({ role: 'user', content: text });
  }
  tools?.close();
}

function copyChatMessage(message: ChatMessage): ChatMessage {
  if (message === null || typeof message !== 'object' || typeof message.role !== 'string') {
    throw new ConfigurationError({
      message:
        'A system instruction must be a string, a { role, content } message, a list of them, or a template',
    });
  }
  return { ...message };
}
