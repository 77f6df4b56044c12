import type { ReasoningPart } from '../schema/reasoning';

/**
 * The reasoning of one streamed reply, as a client reads its events: the text so far, what arrived since the
 * last chunk was yielded (`pending`), and the provider's opaque parts. `MeteredLLM.relayStream` yields the
 * pending text as a chunk's `reasoningDelta` and puts the whole on the `END` chunk.
 */
export class ReasoningStream {
  /** The reasoning text so far. */
  text = '';
  /** Reasoning text not yet yielded. */
  pending = '';
  /** The provider's opaque parts, in order. */
  parts: ReasoningPart[] | undefined;

  /** Adds reasoning text. */
  add(delta: string): void {
    if (delta === '') return;
    this.text += delta;
    this.pending += delta;
  }

  /** The text not yet yielded, and forgets it. */
  take(): string {
    const delta = this.pending;
    this.pending = '';
    return delta;
  }

  /** Adds one opaque part. */
  addPart(part: ReasoningPart): void {
    this.parts ??= [];
    this.parts.push(part);
  }
}
