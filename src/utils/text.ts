/**
 * One way to turn any value into text, for prompts, tool results, logs and error messages. Nothing here
 * throws: cycles, BigInt, `Map` / `Set`, throwing `toJSON` / `toString` / getters, Proxies and
 * null-prototype objects all come out as readable text.
 */

/**
 * How objects are rendered as JSON:
 * - `'compact'`: like `JSON.stringify(value)` (`{"a":1,"b":[1,2]}`);
 * - `'python'`: like Python's `json.dumps(value, ensure_ascii=False)` (`{"a": 1, "b": [1, 2]}`), which is
 *   what Lagent puts in prompts. Non-ASCII characters are kept. Numbers are written as Python writes
 *   them (`0.5`, `1e-05`, `1e+21`), except that an integral number is always written as an integer:
 *   JavaScript cannot tell `1.0` from `1` (`JSON.parse('1.0')` is `1`), so where Python prints `1.0`
 *   (or `1e+16`) this prints `1` (or `10000000000000000`). Keys keep JavaScript's order, which puts
 *   integer-like keys first;
 * - `'pretty'`: like `JSON.stringify(value, null, 2)`.
 */
export type JSONStyle = 'compact' | 'python' | 'pretty';

/** Shown in place of a value that refers back to one of its own containers. */
export const CIRCULAR = '[Circular]';
/** Shown in place of a value that cannot be read (a Proxy whose traps throw, a throwing getter). */
export const UNREADABLE = '[unreadable]';

const MAX_DEPTH = 500;

interface Layout {
  readonly item: string;
  readonly key: string;
  readonly indent: string;
  readonly python: boolean;
}

const LAYOUTS: Readonly<Record<JSONStyle, Layout>> = {
  compact: { item: ',', key: ':', indent: '', python: false },
  python: { item: ', ', key: ': ', indent: '', python: true },
  pretty: { item: ',', key: ': ', indent: '  ', python: false },
};

/** A number as Python's `json.dumps` writes it, integral values as integers (see {@link JSONStyle}). */
export function pythonNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  if (Number.isInteger(value)) return String(value === 0 ? 0 : value);
  if (Math.abs(value) < 1e-4) {
    const [mantissa, exponent = '+0'] = value.toExponential().split('e');
    return `${mantissa}e${exponent[0]}${exponent.slice(1).padStart(2, '0')}`;
  }
  return String(value);
}

/** `Object.prototype.toString`'s tag, or `''` when even that cannot be read. */
function tagOf(value: object): string {
  try {
    return Object.prototype.toString.call(value).slice(8, -1);
  } catch {
    return '';
  }
}

function isErrorLike(value: object): boolean {
  try {
    return value instanceof Error || tagOf(value) === 'Error';
  } catch {
    return false;
  }
}

function read(value: object, key: PropertyKey): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: (value as Record<PropertyKey, unknown>)[key] };
  } catch {
    return { ok: false };
  }
}

/** An error's name, e.g. `TypeError`, or `Error` when it cannot be read. */
function errorName(error: object): string {
  const name = read(error, 'name');
  return name.ok && typeof name.value === 'string' && name.value !== '' ? name.value : 'Error';
}

/** An error's message, `''` when it has none, `undefined` when reading it throws. */
function readMessage(error: object): string | undefined {
  const message = read(error, 'message');
  if (!message.ok) return undefined;
  return typeof message.value === 'string' ? message.value : '';
}

function quote(text: string): string {
  return JSON.stringify(text);
}

class Writer {
  readonly #layout: Layout;
  readonly #stack: object[] = [];

  constructor(layout: Layout) {
    this.#layout = layout;
  }

  /** The JSON text of `value`, or `undefined` where JSON leaves a value out (functions, symbols). */
  write(value: unknown, key: string, indent: string): string | undefined {
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
      const toJSON = read(value, 'toJSON');
      if (!toJSON.ok) return quote(UNREADABLE);
      if (typeof toJSON.value === 'function') {
        try {
          value = (toJSON.value as (key: string) => unknown).call(value, key);
        } catch {
          // A throwing toJSON is ignored: the object is rendered from its own properties.
        }
      }
    }
    switch (typeof value) {
      case 'string':
        return quote(value);
      case 'number':
        if (this.#layout.python) return pythonNumber(value);
        return Number.isFinite(value) ? String(value) : 'null';
      case 'boolean':
        return value ? 'true' : 'false';
      case 'bigint':
        return `${value}`;
      case 'undefined':
      case 'function':
      case 'symbol':
        return undefined;
    }
    if (value === null) return 'null';
    return this.#object(value as object, indent);
  }

  #object(value: object, indent: string): string {
    if (this.#stack.includes(value)) return quote(CIRCULAR);
    if (this.#stack.length >= MAX_DEPTH) return quote('[…]');
    this.#stack.push(value);
    try {
      if (Array.isArray(value)) return this.#list(Array.from(value), indent);
      if (value instanceof Map) {
        const entries: [string, unknown][] = [];
        for (const [key, item] of value) entries.push([typeof key === 'string' ? key : toText(key), item]);
        return this.#entries(entries, indent);
      }
      if (value instanceof Set) return this.#list(Array.from(value), indent);
      if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
        return this.#list(Array.from(value as unknown as ArrayLike<unknown>), indent);
      }
      if (isErrorLike(value)) return quote(errorLine(value));
      if (value instanceof RegExp) return quote(`/${value.source}/${value.flags}`);
      const entries: [string, unknown][] = [];
      for (const key of Object.keys(value)) {
        const item = read(value, key);
        entries.push([key, item.ok ? item.value : UNREADABLE]);
      }
      return this.#entries(entries, indent);
    } catch {
      return quote(UNREADABLE);
    } finally {
      this.#stack.pop();
    }
  }

  #list(items: readonly unknown[], indent: string): string {
    if (items.length === 0) return '[]';
    const inner = indent + this.#layout.indent;
    const parts = items.map((item, i) => this.write(item, String(i), inner) ?? 'null');
    return this.#wrap('[', parts, ']', indent, inner);
  }

  #entries(entries: readonly [string, unknown][], indent: string): string {
    const inner = indent + this.#layout.indent;
    const parts: string[] = [];
    for (const [key, item] of entries) {
      const text = this.write(item, key, inner);
      if (text !== undefined) parts.push(quote(key) + this.#layout.key + text);
    }
    if (parts.length === 0) return '{}';
    return this.#wrap('{', parts, '}', indent, inner);
  }

  #wrap(open: string, parts: string[], close: string, indent: string, inner: string): string {
    if (this.#layout.indent === '') return open + parts.join(this.#layout.item) + close;
    return `${open}\n${inner}${parts.join(`${this.#layout.item}\n${inner}`)}\n${indent}${close}`;
  }
}

/**
 * `value` as JSON text in the given {@link JSONStyle}, or `undefined` for a value JSON has no text for
 * (`undefined`, a function, a symbol). Unlike `JSON.stringify` it never throws: a BigInt is written as its
 * digits (as Python writes a big int), a `Map` as an object, a `Set` as an array, an error as
 * `"Name: message"`, a value seen again inside itself as `"[Circular]"`, and whatever cannot be read (a
 * throwing getter or Proxy trap) as `"[unreadable]"`. A `toJSON` that throws is skipped.
 */
export function jsonText(value: unknown, style: JSONStyle = 'compact'): string | undefined {
  return new Writer(LAYOUTS[style]).write(value, '', '');
}

/**
 * `value` as Python's `json.dumps(value, ensure_ascii=False)` would write it (`", "` and `": "` between
 * items, non-ASCII kept); see {@link JSONStyle} for where JavaScript values cannot match.
 *
 * @example
 * pythonJSON({ name: 'search', parameters: { query: '天气' } }); // '{"name": "search", "parameters": {"query": "天气"}}'
 */
export function pythonJSON(value: unknown): string {
  return jsonText(value, 'python') ?? 'null';
}

/** Options of {@link toText}. */
export interface TextOptions {
  /** How objects and arrays are written. @default 'compact' */
  json?: JSONStyle | undefined;
}

/**
 * Any value as text, never throwing: a string as it is (every character kept), `undefined` as `''`,
 * other primitives as their text (numbers in Python's form with `json: 'python'`), an error as its
 * message, a function as `[function name]`, objects and arrays as JSON (see {@link jsonText}).
 *
 * @example
 * toText({ a: 1n, b: new Set([1]) }); // '{"a":1,"b":[1]}'
 * toText({ city: '北京' }, { json: 'python' }); // '{"city": "北京"}'
 */
export function toText(value: unknown, options: TextOptions = {}): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'undefined':
      return '';
    case 'number':
      return options.json === 'python' ? pythonNumber(value) : String(value);
    case 'boolean':
    case 'bigint':
    case 'symbol':
      return String(value);
    case 'function':
      return `[function ${functionName(value)}]`;
  }
  if (value === null) return 'null';
  if (isErrorLike(value as object)) {
    const message = readMessage(value as object);
    return message || errorName(value as object);
  }
  return jsonText(value, options.json) ?? `[${tagOf(value as object) || 'object'}]`;
}

function functionName(fn: Function): string {
  const name = read(fn, 'name');
  return name.ok && typeof name.value === 'string' && name.value !== '' ? name.value : '(anonymous)';
}

/** `Name: message` (or just the name when there is no message) for an error. */
function errorLine(error: object): string {
  const name = errorName(error);
  const message = readMessage(error);
  return message ? `${name}: ${message}` : name;
}

/** Cuts long text to `max` characters, marking the cut with `…`. */
export function shorten(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `a Map`, `an Error`: a name with its indefinite article. */
function article(name: string): string {
  return `${/^[AEIOUaeiou]/.test(name) ? 'an' : 'a'} ${name}`;
}

/**
 * What kind of value this is, as a noun phrase for messages: `null`, `undefined`, `a string`,
 * `a number`, `an array`, `an object`, `a Map`, `a Date`, `a function`, ...; never throws.
 */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'bigint':
      return 'a bigint';
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
  }
  try {
    if (Array.isArray(value)) return 'an array';
    const proto = Object.getPrototypeOf(value);
    if (proto === null || proto === Object.prototype) return 'an object';
    const name = read(proto as object, 'constructor');
    const ctorName = name.ok && typeof name.value === 'function' ? functionName(name.value) : '';
    if (ctorName && ctorName !== '(anonymous)') return article(ctorName);
    return 'an object';
  } catch {
    return 'an object that cannot be inspected';
  }
}

/**
 * A readable sentence for anything thrown, for `errmsg` and error messages. An error gives its message
 * (as Python's `str(exc)` does); anything else says what was thrown, e.g. `the tool threw null`,
 * `the tool threw the number 42`, `the tool threw an object: {"code":1}`. `subject` names who threw.
 *
 * @example
 * thrownText(new Error('disk full')); // 'disk full'
 * thrownText(null, 'hook Audit.beforeAction'); // 'hook Audit.beforeAction threw null'
 */
export function thrownText(error: unknown, subject = 'the tool'): string {
  switch (typeof error) {
    case 'string':
      return error === '' ? `${subject} threw an empty string` : error;
    case 'undefined':
      return `${subject} threw undefined`;
    case 'number':
    case 'bigint':
      return `${subject} threw the number ${String(error)}`;
    case 'boolean':
      return `${subject} threw the boolean ${String(error)}`;
    case 'symbol':
      return `${subject} threw ${String(error)}`;
    case 'function':
      return `${subject} threw a function (${functionName(error)})`;
  }
  if (error === null) return `${subject} threw null`;
  const object = error as object;
  if (isErrorLike(object)) {
    const message = readMessage(object);
    const name = errorName(object);
    if (message === undefined) return `${subject} threw ${article(name)} whose message cannot be read`;
    return message !== '' ? message : `${subject} threw ${article(name)} without a message`;
  }
  const text = jsonText(object);
  if (text === undefined || text === quote(UNREADABLE))
    return `${subject} threw an object that cannot be read`;
  return `${subject} threw ${kindOf(object)}: ${shorten(text, 300)}`;
}

/**
 * An error's message for a log line or another error's message: an `Error`'s `message`, anything else as
 * `String()` gives it, and never a throw (a getter that throws, an object without `toString`).
 *
 * @example
 * errorMessage(new Error('disk full')); // 'disk full'
 * errorMessage('timeout'); // 'timeout'
 */
export function errorMessage(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'an unprintable value';
  }
}
