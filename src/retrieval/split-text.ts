import { type TokenEncoding, textCounterFor } from '../llms/token-count';
import { ConfigurationError, ValidationError } from '../schema/errors';

/** Options of {@link splitText}. */
export interface SplitTextOptions {
  /** The most tokens a chunk holds. */
  chunkTokens: number;
  /** Tokens of the end of a chunk repeated at the start of the next, so a sentence cut at a border is whole in one of them. @default 0 */
  overlapTokens?: number | undefined;
  /**
   * Where to cut, best first: paragraphs, lines, sentences, words. A piece still too long after the last
   * separator is cut between characters.
   * @default ['\n\n', '\n', '. ', ' ']
   */
  separators?: readonly string[] | undefined;
  /**
   * How tokens are counted: a function, or an encoding counted exactly with `gpt-tokenizer` installed. By
   * default about one token per four bytes of UTF-8.
   */
  countTokens?: ((text: string) => number) | TokenEncoding | undefined;
}

/** One chunk of a text: its text and where it lies in the original (`text === original.slice(start, end)`). */
export interface TextChunk {
  text: string;
  start: number;
  end: number;
  /** Its tokens, as the counter counted its pieces. */
  tokens: number;
}

const SEPARATORS = ['\n\n', '\n', '. ', ' '];

interface Piece {
  start: number;
  end: number;
  tokens: number;
}

function checkCount(value: unknown, name: string, minimum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) {
    throw new ConfigurationError({
      message: `splitText: ${name} must be an integer of at least ${minimum}, got ${String(value)}`,
    });
  }
  return value;
}

/**
 * Splits a text into chunks of at most `chunkTokens` tokens for embedding: by paragraphs where they fit, else
 * by lines, sentences, words, and at last characters; neighbouring pieces are joined while they fit, and each
 * chunk starts with up to `overlapTokens` tokens of the end of the one before. Each piece is counted once per
 * level of separator, so the work grows linearly with the text (a 10 MB document takes a fraction of a
 * second with the default counter). Chunks that are only white space are left out.
 *
 * @example
 * splitText(manual, { chunkTokens: 512, overlapTokens: 64 }); // [{ text, start, end, tokens }, ...]
 */
export function splitText(text: string, options: SplitTextOptions): TextChunk[] {
  if (typeof text !== 'string')
    throw new ValidationError({ message: 'splitText takes a string', field: 'text' });
  const chunkTokens = checkCount(options?.chunkTokens, 'chunkTokens', 1);
  const overlapTokens = checkCount(options.overlapTokens ?? 0, 'overlapTokens', 0);
  if (overlapTokens >= chunkTokens) {
    throw new ConfigurationError({
      message: `splitText: overlapTokens (${overlapTokens}) must be less than chunkTokens (${chunkTokens})`,
    });
  }
  const separators = options.separators ?? SEPARATORS;
  if (
    !Array.isArray(separators) ||
    separators.some((separator) => typeof separator !== 'string' || separator === '')
  ) {
    throw new ConfigurationError({ message: 'splitText: separators must be non-empty strings' });
  }
  const counter = options.countTokens;
  const count =
    typeof counter === 'function'
      ? counter
      : textCounterFor(counter === undefined ? {} : { encoding: counter }).count;
  const pieces: Piece[] = [];
  const cut = (start: number, end: number, tokens: number, level: number): void => {
    if (tokens <= chunkTokens) {
      pieces.push({ start, end, tokens });
      return;
    }
    const separator = separators[level];
    if (separator === undefined) {
      cutCharacters(text, start, end, tokens, chunkTokens, count, pieces);
      return;
    }
    let from = start;
    while (from < end) {
      const found = text.indexOf(separator, from);
      // A piece keeps its separator at its end, so the chunks put together are the text again.
      const to = found === -1 || found + separator.length > end ? end : found + separator.length;
      cut(from, to, count(text.slice(from, to)), level + 1);
      from = to;
    }
  };
  if (text.length > 0) cut(0, text.length, count(text), 0);
  return merge(text, pieces, chunkTokens, overlapTokens);
}

/** Cuts a piece with no separator left into slices that fit, never inside a surrogate pair. */
function cutCharacters(
  text: string,
  start: number,
  end: number,
  tokens: number,
  chunkTokens: number,
  count: (text: string) => number,
  pieces: Piece[],
): void {
  let from = start;
  let perToken = (end - start) / Math.max(1, tokens);
  while (from < end) {
    let length = Math.max(1, Math.floor(chunkTokens * perToken));
    for (;;) {
      let to = Math.min(end, from + length);
      if (to < end && isHighSurrogate(text.charCodeAt(to - 1))) to = to - 1 > from ? to - 1 : to + 1;
      const sliceTokens = count(text.slice(from, to));
      if (sliceTokens <= chunkTokens || to - from <= 1) {
        pieces.push({ start: from, end: to, tokens: sliceTokens });
        if (sliceTokens > 0) perToken = (to - from) / sliceTokens;
        from = to;
        break;
      }
      // Too many tokens: shrink in proportion (at least by one character) and count again.
      length = Math.max(1, Math.min(to - from - 1, Math.floor(((to - from) * chunkTokens) / sliceTokens)));
    }
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Joins neighbouring pieces into chunks of at most `chunkTokens`, each beginning with the previous one's last `overlapTokens`. */
function merge(
  text: string,
  pieces: readonly Piece[],
  chunkTokens: number,
  overlapTokens: number,
): TextChunk[] {
  const chunks: TextChunk[] = [];
  let current: Piece[] = [];
  let tokens = 0;
  const emit = () => {
    const first = current[0]!;
    const last = current.at(-1)!;
    const raw = text.slice(first.start, last.end);
    const leading = raw.length - raw.trimStart().length;
    const trimmed = raw.trim();
    if (trimmed !== '') {
      chunks.push({
        text: trimmed,
        start: first.start + leading,
        end: first.start + leading + trimmed.length,
        tokens,
      });
    }
  };
  for (const piece of pieces) {
    if (current.length > 0 && tokens + piece.tokens > chunkTokens) {
      emit();
      const kept: Piece[] = [];
      let keptTokens = 0;
      for (let index = current.length - 1; index >= 0; index--) {
        const candidate = current[index]!;
        if (keptTokens + candidate.tokens > overlapTokens) break;
        kept.unshift(candidate);
        keptTokens += candidate.tokens;
      }
      while (kept.length > 0 && keptTokens + piece.tokens > chunkTokens) keptTokens -= kept.shift()!.tokens;
      current = kept;
      tokens = keptTokens;
    }
    current.push(piece);
    tokens += piece.tokens;
  }
  if (current.length > 0) emit();
  return chunks;
}
