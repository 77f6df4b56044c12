/**
 * Cuts a stream at the first stop word, even one split across chunks, and never releases text that
 * could be the start of a stop word until the next chunk shows it is not. Feed chunks with `push`, then
 * call `flush` at the end of the stream.
 *
 * @example
 * const filter = new StopWordFilter(['<|im_end|>']);
 * filter.push('Hello <|im'); // 'Hello ' ('<|im' is held back)
 * filter.push('_end|> junk'); // '' and filter.stopped === true
 */
export class StopWordFilter {
  readonly #stopWords: readonly string[];
  #text = '';
  #released = 0;
  #stopped = false;

  constructor(stopWords: readonly string[]) {
    this.#stopWords = stopWords.filter((word) => word.length > 0);
  }

  /** True once a stop word was seen: nothing after it is ever released. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Everything released so far. */
  get text(): string {
    return this.#text.slice(0, this.#released);
  }

  /** Adds a chunk; returns the text that is now safe to show (possibly ''). */
  push(chunk: string): string {
    if (this.#stopped || chunk.length === 0) return '';
    this.#text += chunk;
    // Text before #released was checked already, and no stop word can start before it.
    let end = this.#text.length;
    for (const word of this.#stopWords) {
      const index = this.#text.indexOf(word, this.#released);
      if (index !== -1 && index < end) end = index;
    }
    // A stop word that starts before the match may still complete (`<>>b` after `<>` when `>` matched): the
    // earliest one wins, so the match waits until no such start remains.
    const open = this.#text.length - this.#heldBack();
    if (end < this.#text.length && end <= open) {
      this.#stopped = true;
      this.#text = this.#text.slice(0, end);
      return this.#release(end);
    }
    return this.#release(Math.min(end, open));
  }

  /** Ends the stream: releases what was held back, up to the earliest stop word in it. */
  flush(): string {
    if (this.#stopped) return '';
    let end = this.#text.length;
    for (const word of this.#stopWords) {
      const index = this.#text.indexOf(word, this.#released);
      if (index !== -1 && index < end) end = index;
    }
    if (end < this.#text.length) {
      this.#stopped = true;
      this.#text = this.#text.slice(0, end);
    }
    return this.#release(end);
  }

  /** Length of the longest suffix of the text that is a proper prefix of some stop word. */
  #heldBack(): number {
    let longest = 0;
    const text = this.#text;
    for (const word of this.#stopWords) {
      const max = Math.min(word.length - 1, text.length - this.#released);
      for (let length = max; length > longest; length--) {
        if (text.endsWith(word.slice(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }

  #release(end: number): string {
    if (end <= this.#released) return '';
    const piece = this.#text.slice(this.#released, end);
    this.#released = end;
    return piece;
  }
}
