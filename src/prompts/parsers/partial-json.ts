/**
 * A value of `T` with every part possibly missing: the shape of a partial reply while it streams.
 */
export type DeepPartial<T> = T extends readonly (infer E)[]
  ? DeepPartial<E>[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** Options of {@link PartialJSONParser}. */
export interface PartialJSONParserOptions {
  /**
   * How deeply arrays and objects may nest. Text nesting deeper stops the parser (its `error` says why)
   * and the value stays as it was, so model output cannot build a value that overflows the stack of
   * whoever walks it.
   * @default 512
   */
  maxDepth?: number | undefined;
}

// Parser states.
const PRELUDE = 0; // before the value: prose; `{`, `[` or a ``` fence starts it
const TICKS = 1; // counting backticks of a fence
const FENCE_LANG = 2; // the rest of a fence's opening line
const VALUE = 3; // a value is expected
const ARRAY_FIRST = 4; // after `[` or an array's `,`: a value or `]`
const OBJECT_KEY = 5; // after `{` or an object's `,`: a key or `}`
const COLON = 6; // after a key
const AFTER = 7; // after a value: `,` or the container's close
const STRING = 8;
const ESCAPE = 9; // after a backslash in a string
const UNICODE = 10; // the hex digits of a \u escape
const NUMBER = 11;
const LITERAL = 12; // true, false or null
const SLASH = 13; // one `/` outside a string
const COMMENT = 14; // a `//` comment, up to the end of its line
const DONE = 15; // the value is complete; the rest of the text is ignored
const STOPPED = 16; // nesting too deep; nothing more is read

const NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
const LITERALS: Record<string, [string, unknown]> = {
  t: ['true', true],
  f: ['false', false],
  n: ['null', null],
};

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

function isNumberChar(code: number): boolean {
  return (
    (code >= 48 && code <= 57) || code === 45 || code === 43 || code === 46 || code === 101 || code === 69
  );
}

type Container = Record<string, unknown> | unknown[];

/**
 * An incremental JSON reader for streamed model output: `push` each new piece of text, read `value` for
 * the partial result so far. It keeps its state (a stack of open containers) between pieces, so a piece
 * costs time proportional to its length, never to the text before it.
 *
 * The partial value holds what is complete so far: objects with the members whose values have started,
 * arrays with the elements so far, strings as far as they have arrived (an escape, or a `\uD83D\uDE00`
 * surrogate pair, appears once all of it has), numbers, `true`, `false` and `null` once complete (never a
 * prefix such as `12` of `123`). Each partial is a prefix of the final value: later pieces only add.
 *
 * **The value is live**: it is one object, updated in place by each `push` (copying it per piece would cost
 * time proportional to the whole value, per piece). Copy it (`structuredClone`) to keep the state of one
 * moment.
 *
 * Read leniently, like `JSONParser`: text before the value (prose, a ```json fence line) is skipped, the
 * value ends at its last bracket or the closing fence, `//` comments and trailing commas are allowed.
 * At the start of the text any JSON value may begin; after other text only `{` or `[` starts one. Text
 * that turns out not to be JSON (say a `{` in prose) is dropped and the search for a value goes on.
 *
 * @example
 * const reader = new PartialJSONParser();
 * reader.push('```json\n{"city": "Par');
 * reader.value; // { city: 'Par' }
 * reader.push('is", "days": [1, 2');
 * reader.value; // { city: 'Paris', days: [1] }
 */
export class PartialJSONParser<T = unknown> {
  /** See {@link PartialJSONParserOptions.maxDepth}. */
  readonly maxDepth: number;
  /** Why the parser stopped (nesting too deep), else undefined. */
  error: string | undefined = undefined;

  #state = PRELUDE;
  /** Whether only whitespace has been read so far (any JSON value may start there). */
  #atStart = true;
  #root: unknown = undefined;
  #hasRoot = false;
  readonly #stack: Container[] = [];
  /** The key of each open object's member being read (undefined for arrays). */
  readonly #keys: (string | undefined)[] = [];
  /** State to return to after a comment. */
  #resume = PRELUDE;
  #ticks = 0;
  /** The string being read, and whether it is an object key. */
  #text = '';
  #isKey = false;
  /** Where the string being read sits in its parent (array index or key), to update it per piece. */
  #slot: string | number = 0;
  /** A high surrogate from a \u escape, held until its low half arrives. */
  #high = '';
  #hex = '';
  #literal = '';
  #literalValue: unknown = null;
  #literalAt = 0;
  /** The total length of the text pushed, for {@link PartialJSONParser.feed}. */
  #received = 0;

  constructor(options: PartialJSONParserOptions = {}) {
    this.maxDepth = options.maxDepth ?? 512;
  }

  /** The partial value so far (live: updated in place by later pushes); undefined before the value starts. */
  get value(): DeepPartial<T> | undefined {
    return this.#root as DeepPartial<T> | undefined;
  }

  /** How many characters have been read (pushed) so far. */
  get received(): number {
    return this.#received;
  }

  /** Whether the value is complete (its last bracket, or a scalar's end, has been read). */
  get done(): boolean {
    return this.#state === DONE || (this.#state === AFTER && this.#stack.length === 0 && this.#hasRoot);
  }

  /**
   * Reads a stream chunk given as the cumulative text and its new tail (`delta`): only the tail is read
   * when it extends what was read before; a text that does not (the stream restarted) is read afresh.
   */
  feed(content: string, delta?: string): DeepPartial<T> | undefined {
    if (delta !== undefined && this.#received + delta.length === content.length) return this.push(delta);
    if (content.length < this.#received) this.reset();
    return this.push(this.#received === 0 ? content : content.slice(this.#received));
  }

  /** Forgets everything read. */
  reset(): void {
    this.#discard();
    this.#state = PRELUDE;
    this.#atStart = true;
    this.#received = 0;
    this.error = undefined;
  }

  /** Reads the next piece of text; returns the partial value. */
  push(piece: string): DeepPartial<T> | undefined {
    this.#received += piece.length;
    const length = piece.length;
    let i = 0;
    while (i < length) {
      const state = this.#state;
      if (state === STRING) {
        i = this.#readString(piece, i);
        continue;
      }
      if (state === DONE || state === STOPPED) break;
      const char = piece.charCodeAt(i);
      switch (state) {
        case PRELUDE:
          this.#prelude(char);
          break;
        case TICKS:
          if (char === 96) {
            if (++this.#ticks === 3) this.#state = FENCE_LANG;
          } else {
            this.#state = PRELUDE;
            this.#prelude(char);
          }
          break;
        case FENCE_LANG:
          if (char === 10) {
            this.#state = VALUE;
            this.#atStart = true;
          }
          break;
        case ESCAPE:
          this.#escape(piece[i]!);
          break;
        case UNICODE:
          this.#unicode(piece[i]!);
          break;
        case NUMBER:
          if (isNumberChar(char)) this.#text += piece[i];
          else {
            this.#endNumber();
            continue; // the character that ended the number is read again
          }
          break;
        case LITERAL:
          if (piece[i] !== this.#literal[this.#literalAt]) this.#fail();
          else if (++this.#literalAt === this.#literal.length) this.#complete(this.#literalValue);
          break;
        case COMMENT:
          if (char === 10) this.#state = this.#resume;
          break;
        case SLASH:
          if (char === 47) this.#state = COMMENT;
          else {
            this.#fail();
            continue;
          }
          break;
        default:
          this.#structural(char, piece[i]!);
      }
      i++;
    }
    if (this.#state === STRING || this.#state === ESCAPE || this.#state === UNICODE) this.#showString();
    return this.#root as DeepPartial<T> | undefined;
  }

  /**
   * Ends the text: a number or literal still being read is complete now. Returns the value, complete or
   * partial ({@link PartialJSONParser.done} says which).
   */
  end(): DeepPartial<T> | undefined {
    if (this.#state === NUMBER) this.#endNumber();
    return this.#root as DeepPartial<T> | undefined;
  }

  #prelude(char: number): void {
    if (char === 96) {
      this.#state = TICKS;
      this.#ticks = 1;
    } else if (char === 123 || char === 91 || this.#atStart) {
      this.#state = VALUE;
      this.#structural(char, String.fromCharCode(char));
    }
  }

  /** A character outside strings, numbers and literals. */
  #structural(code: number, char: string): void {
    const state = this.#state;
    if (isSpace(code)) return;
    if (code === 47) {
      this.#resume = state;
      this.#state = SLASH;
      return;
    }
    if (state === VALUE || state === ARRAY_FIRST) {
      if (code === 93 && state === ARRAY_FIRST) {
        this.#close();
        return;
      }
      this.#startValue(code, char);
      return;
    }
    if (state === OBJECT_KEY) {
      if (code === 34) {
        this.#text = '';
        this.#isKey = true;
        this.#state = STRING;
      } else if (code === 125) this.#close();
      else this.#fail();
      return;
    }
    if (state === COLON) {
      if (code === 58) this.#state = VALUE;
      else this.#fail();
      return;
    }
    // AFTER
    const top = this.#stack.length - 1;
    if (top < 0) {
      // After a complete scalar at the start: more text means the scalar was prose.
      this.#fail();
      this.#prelude(code);
      return;
    }
    const inArray = Array.isArray(this.#stack[top]);
    if (code === 44) this.#state = inArray ? ARRAY_FIRST : OBJECT_KEY;
    else if (code === (inArray ? 93 : 125)) this.#close();
    else this.#fail();
  }

  #startValue(code: number, char: string): void {
    this.#atStart = false;
    if (code === 123 || code === 91) {
      if (this.#stack.length >= this.maxDepth) {
        this.error = `the JSON nests deeper than ${this.maxDepth} levels`;
        this.#state = STOPPED;
        return;
      }
      const container: Container = code === 123 ? {} : [];
      this.#place(container);
      this.#stack.push(container);
      this.#keys.push(undefined);
      this.#state = code === 123 ? OBJECT_KEY : ARRAY_FIRST;
    } else if (code === 34) {
      this.#text = '';
      this.#high = '';
      this.#isKey = false;
      this.#slot = this.#place('');
      this.#state = STRING;
    } else if (code === 45 || (code >= 48 && code <= 57)) {
      this.#text = char;
      this.#state = NUMBER;
    } else if (LITERALS[char] !== undefined) {
      [this.#literal, this.#literalValue] = LITERALS[char];
      this.#literalAt = 1;
      this.#state = LITERAL;
    } else this.#fail();
  }

  /** Puts a value in the innermost open container (or makes it the root); returns its slot there. */
  #place(value: unknown): string | number {
    const top = this.#stack.length - 1;
    if (top < 0) {
      this.#root = value;
      this.#hasRoot = true;
      return 0;
    }
    const container = this.#stack[top]!;
    if (Array.isArray(container)) return container.push(value) - 1;
    const key = this.#keys[top]!;
    setMember(container, key, value);
    return key;
  }

  /** Shows the string being read in its slot (the partial value), without a held high surrogate. */
  #showString(): void {
    if (this.#isKey) return;
    const top = this.#stack.length - 1;
    if (top < 0) this.#root = this.#text;
    else if (typeof this.#slot === 'number') (this.#stack[top] as unknown[])[this.#slot] = this.#text;
    else setMember(this.#stack[top] as Record<string, unknown>, this.#slot, this.#text);
  }

  /** Reads string characters from `i` up to a quote, a backslash or the piece's end; returns the next index. */
  #readString(piece: string, i: number): number {
    let j = i;
    const length = piece.length;
    while (j < length) {
      const code = piece.charCodeAt(j);
      if (code === 34 || code === 92) break;
      j++;
    }
    if (j > i) this.#text += this.#flushHigh() + piece.slice(i, j);
    if (j === length) return j;
    if (piece.charCodeAt(j) === 92) {
      this.#state = ESCAPE;
      return j + 1;
    }
    this.#text += this.#flushHigh();
    this.#endString();
    return j + 1;
  }

  /** A held high surrogate not followed by its low half joins the text as it is (as JSON.parse does). */
  #flushHigh(): string {
    const high = this.#high;
    this.#high = '';
    return high;
  }

  #endString(): void {
    if (this.#isKey) {
      this.#keys[this.#keys.length - 1] = this.#text;
      this.#state = COLON;
      return;
    }
    this.#showString();
    this.#afterValue();
  }

  #escape(char: string): void {
    if (char === 'u') {
      this.#hex = '';
      this.#state = UNICODE;
      return;
    }
    const decoded = ESCAPES[char];
    if (decoded === undefined) {
      this.#fail();
      return;
    }
    this.#text += this.#flushHigh() + decoded;
    this.#state = STRING;
  }

  #unicode(char: string): void {
    if (!/[0-9a-fA-F]/.test(char)) {
      this.#fail();
      return;
    }
    this.#hex += char;
    if (this.#hex.length < 4) return;
    const code = Number.parseInt(this.#hex, 16);
    const unit = String.fromCharCode(code);
    if (code >= 0xd800 && code <= 0xdbff) {
      this.#text += this.#flushHigh();
      this.#high = unit;
    } else this.#text += this.#flushHigh() + unit;
    this.#state = STRING;
  }

  #endNumber(): void {
    if (!NUMBER_TEXT.test(this.#text)) {
      this.#fail();
      return;
    }
    this.#place(Number(this.#text));
    this.#afterValue();
  }

  #complete(value: unknown): void {
    this.#place(value);
    this.#afterValue();
  }

  /** Closes the innermost container (its callers have checked the bracket matches it). */
  #close(): void {
    this.#stack.pop();
    this.#keys.pop();
    this.#afterValue();
  }

  #afterValue(): void {
    if (this.#stack.length === 0) {
      // A container ends the value; a scalar at the very start ends it only if nothing but space follows.
      this.#state = typeof this.#root === 'object' && this.#root !== null ? DONE : AFTER;
      return;
    }
    this.#state = AFTER;
  }

  /** Text that is not JSON: drop the value read so far and look for the next one. */
  #fail(): void {
    this.#discard();
    this.#state = PRELUDE;
  }

  #discard(): void {
    this.#root = undefined;
    this.#hasRoot = false;
    this.#stack.length = 0;
    this.#keys.length = 0;
    this.#text = '';
    this.#high = '';
    this.#atStart = false;
  }
}

/** Sets an own member, also for the key `__proto__` (as JSON.parse does). */
function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else object[key] = value;
}
