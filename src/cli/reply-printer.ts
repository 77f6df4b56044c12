import { terminalText, unfinishedAt } from './terminal-text';

/**
 * The most text held back for one unfinished sequence (an OSC a model never ends): past it, the text is cleaned as
 * it stands, so what follows may show text that cleaning the whole reply would have dropped (never a control).
 */
const MAX_HELD = 65_536;

/**
 * Prints a streamed reply to a terminal as it grows, without the escape sequences and control characters a model
 * could send (see `terminalText`). A chunk whose `delta` says what the text grew by is printed from its delta
 * alone, so a long reply costs time linear in its length; a sequence that a chunk leaves unfinished is held back
 * until the next one, so what is printed is what cleaning the whole text would give. A chunk that does not
 * extend the previous one (or has no delta) is compared whole, as the last resort.
 */
export class ReplyPrinter {
  readonly #write: (text: string) => void;
  /** Length of the raw text received through deltas; -1 once a chunk was rendered whole. */
  #received = 0;
  /** The raw tail held back: a sequence that may go on in the next chunk. */
  #held = '';
  /** What was printed, cleaned. */
  #printed = '';

  constructor(write: (text: string) => void) {
    this.#write = write;
  }

  /** Whether anything was printed. */
  get printed(): boolean {
    return this.#printed !== '';
  }

  /** Prints what `content` adds to what was printed. */
  show(content: unknown, delta: string | undefined, render: (content: unknown) => string): void {
    if (
      typeof content === 'string' &&
      typeof delta === 'string' &&
      this.#received >= 0 &&
      content.length === this.#received + delta.length
    ) {
      this.#received = content.length;
      const text = this.#held + delta;
      let cut = unfinishedAt(text);
      if (text.length - cut > MAX_HELD) cut = text.length;
      this.#held = text.slice(cut);
      const piece = terminalText(text.slice(0, cut));
      if (piece !== '') {
        this.#write(piece);
        this.#printed += piece;
      }
      return;
    }
    const rendered = render(content);
    this.#received = typeof content === 'string' ? content.length : -1;
    this.#held = '';
    if (rendered === this.#printed) return;
    this.#write(rendered.startsWith(this.#printed) ? rendered.slice(this.#printed.length) : `\n${rendered}`);
    this.#printed = rendered;
  }
}
