import type { Memory } from '../../memory/memory';
import type { OutputParser } from '../../prompts/output-parser';
import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { contentToText } from './content';

/** Something that renders to the system prompt text, such as a `PromptTemplate`. */
export interface SystemTemplate {
  format(variables?: Record<string, unknown>): string;
}

/** An agent's system instruction: text, one chat message, several, or a template. */
export type SystemInstruction = string | ChatMessage | readonly ChatMessage[] | SystemTemplate;

/**
 * Turns a session's memory into chat messages: the system instruction first, then the agent's own turns
 * as `assistant` and everything else as `user` (consecutive user turns joined). Never mutates its inputs.
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
    const out = this.aggregateSystemInstruction(systemInstruction, parser);
    if (!memory) return out;
    for (const message of memory.getMemory()) {
      if (message.sender === name) {
        out.push({ role: 'assistant', content: contentToText(message.content) });
      } else {
        const text = contentToText(message.content);
        const last = out[out.length - 1];
        // `out` holds only fresh objects, so extending the last one in place is safe.
        if (last !== undefined && last.role === 'user') last.content += text;
        else {
          out.push({ role: 'user', content: text });
        }
      }
    }
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

function copyChatMessage(message: ChatMessage): ChatMessage {
  if (message === null || typeof message !== 'object' || typeof message.role !== 'string') {
    throw new ConfigurationError({
      message:
        'A system instruction must be a string, a { role, content } message, a list of them, or a template',
    });
  }
  return { ...message };
}
