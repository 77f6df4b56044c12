/**
 * What an agent's `outputFormat` must provide: `parseResponse` turns model text into the message's
 * `formatted` field. `formatInstruction` (text added to the prompt) and `formatResponse` (the inverse of
 * parsing, used when re-rendering history) are optional.
 */
export interface OutputParser<T = unknown> {
  parseResponse(text: string): T;
  formatInstruction?(): string;
  formatResponse?(parsed: T): string;
}
