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
  /**
   * When true, an agent's built-in forward appends `formatInstruction()` to the system prompt it sends (after
   * the agent's own `template`, unless the template already contains it). `JSONParser` and
   * `CustomFormatParser` set it.
   */
  readonly addsFormatInstruction?: boolean | undefined;
}
