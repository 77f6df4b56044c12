import { checkTexts, estimateTokens } from '../retrieval/texts';
import type { Embedder, EmbeddingUsage, EmbedOptions } from '../retrieval/types';
import { ConfigurationError } from '../schema/errors';

/** Options of {@link HashEmbedder}. */
export interface HashEmbedderOptions {
  /** The length of the vectors. @default 256 */
  dimensions?: number | undefined;
}

const WORD = /[\p{L}\p{N}]+/gu;

/** FNV-1a, 32 bits: a fast, well-spread hash of a string. */
function hash(text: string): number {
  let value = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 0x01000193);
  }
  return value >>> 0;
}

/**
 * A deterministic embedder for tests, with no model and no network: each word of a text (lower-cased) and
 * each pair of neighbouring words is hashed to a dimension and a sign, and the counts are scaled to unit
 * length. Texts that share words are near each other, texts that share none are nearly orthogonal, and the
 * same text always gives the same vector, in any process. It refuses empty texts as real embedders do.
 *
 * @example
 * const embedder = new HashEmbedder({ dimensions: 64 });
 * const [cat, kitten, car] = await embedder.embed(['the cat sat', 'the cat slept', 'a red car']);
 */
export class HashEmbedder implements Embedder {
  readonly dimensions: number;
  /** Texts embedded and their estimated tokens, over the embedder's life. */
  readonly usage: EmbeddingUsage & { texts: number } = { tokens: 0, texts: 0 };

  constructor(options: HashEmbedderOptions = {}) {
    const dimensions = options.dimensions ?? 256;
    if (!Number.isInteger(dimensions) || dimensions < 2 || dimensions > 16_000) {
      throw new ConfigurationError({
        message: `HashEmbedder: dimensions must be an integer from 2 to 16000, got ${String(dimensions)}`,
      });
    }
    this.dimensions = dimensions;
  }

  /** One text's vector (the text is not checked). */
  vectorOf(text: string): number[] {
    const vector = new Array<number>(this.dimensions).fill(0);
    const words = text.toLowerCase().match(WORD) ?? [text.trim()];
    const add = (feature: string, weight: number) => {
      const value = hash(feature);
      // The low bit picks the sign, so unrelated features cancel out on average instead of piling up.
      vector[(value >>> 1) % this.dimensions]! += value & 1 ? weight : -weight;
    };
    for (let index = 0; index < words.length; index++) {
      add(words[index]!, 1);
      if (index > 0) add(`${words[index - 1]} ${words[index]}`, 0.5);
    }
    let norm = 0;
    for (const value of vector) norm += value * value;
    // Features that cancelled out exactly leave a zero vector: give it a direction of its own.
    if (norm === 0) {
      vector[hash(text) % this.dimensions] = 1;
      return vector;
    }
    const scale = 1 / Math.sqrt(norm);
    return vector.map((value) => value * scale);
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<number[][]> {
    checkTexts(texts, 'HashEmbedder');
    if (options.signal?.aborted) throw options.signal.reason;
    const vectors = texts.map((text) => this.vectorOf(text));
    const tokens = estimateTokens(texts);
    this.usage.tokens += tokens;
    this.usage.texts += texts.length;
    if (texts.length > 0) options.onUsage?.({ tokens });
    return vectors;
  }
}
