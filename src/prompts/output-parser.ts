import type { ChatMessage } from '../schema/chat-message';

/**
 * What an agent's `outputFormat` must provide: `parseResponse` turns model text into the message's
 * `formatted` field. `formatInstruction` (text, or system messages, added to the prompt by tool-aware
 * aggregators) and `formatResponse` (the inverse of parsing, used when re-rendering history) are optional.
 */
export interface OutputParser<T = unknown> {
  parseResponse(text: string): T;
  formatInstruction?(): string | ChatMessage[];
  /** `T` is read from `parseResponse` only (a parser that formats any value is still an `OutputParser<T>`). */
  formatResponse?(parsed: NoInfer<T>): string;
}
