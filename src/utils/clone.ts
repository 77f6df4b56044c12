import { isPlainObject } from './is';

/**
 * Deep-copies message payloads. Strings and other primitives are returned as they are (no allocation on
 * the hot path); arrays and plain objects are copied member by member; an object with its own `clone()`
 * (AgentMessage, ActionReturn) is asked to copy itself; other class instances keep their prototype.
 * Cycles are preserved. Payloads a few levels deep (the common case) are copied without a bookkeeping map,
 * so an object reached twice in one is copied twice, as a JSON round trip would. A `"__proto__"` key (as
 * `JSON.parse` makes one) stays an own data property of the copy; it never becomes the copy's prototype.
 * Never throws: an object that cannot be read (a Proxy whose traps throw) is kept as it is rather than copied.
 */
export function deepClone<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const fast = cloneObject(value as object, undefined, 0);
  return (fast === RETRY ? cloneObject(value as object, new Map(), 0) : fast) as T;
}

/**
 * Without a `seen` map, copying gives up past this depth (which a cycle always reaches) or at an unreadable
 * object, and {@link deepClone} copies again with the map.
 */
const UNTRACKED_DEPTH = 32;
const RETRY: unique symbol = Symbol('copy again with cycle tracking');

/** Sets `copy[key]`, keeping a `"__proto__"` key as data instead of calling the prototype setter. */
function put(copy: Record<string, unknown>, key: string, item: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
  } else copy[key] = item;
}

/** Copies one object; `seen` (when given) maps the objects copied so far to their copies, for cycles. */
function cloneObject(value: object, seen: Map<object, unknown> | undefined, depth: number): unknown {
  if (seen === undefined) {
    if (depth > UNTRACKED_DEPTH) return RETRY;
  } else {
    const existing = seen.get(value);
    if (existing !== undefined) return existing;
  }
  try {
    if (Array.isArray(value)) {
      const copy: unknown[] = new Array(value.length);
      seen?.set(value, copy);
      for (let i = 0; i < value.length; i++) {
        const item = cloneValue(value[i], seen, depth);
        if (item === RETRY) return RETRY;
        copy[i] = item;
      }
      return copy;
    }
    let copy: Record<string, unknown>;
    if (isPlainObject(value)) copy = Object.getPrototypeOf(value) === null ? Object.create(null) : {};
    else {
      if (typeof (value as { clone?: unknown }).clone === 'function') {
        return (value as { clone(): unknown }).clone();
      }
      if (value instanceof Date) return new Date(value.getTime());
      if (
        value instanceof Map ||
        value instanceof Set ||
        ArrayBuffer.isView(value) ||
        value instanceof RegExp
      ) {
        return structuredClone(value);
      }
      copy = Object.create(Object.getPrototypeOf(value)) as Record<string, unknown>;
    }
    seen?.set(value, copy);
    // The own enumerable keys, in Object.keys order: for-in with an own-key check allocates no key array.
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const item = cloneValue((value as Record<string, unknown>)[key], seen, depth);
      if (item === RETRY) return RETRY;
      put(copy, key, item);
    }
    return copy;
  } catch {
    if (seen === undefined) return RETRY;
    seen.set(value, value);
    return value;
  }
}

function cloneValue(value: unknown, seen: Map<object, unknown> | undefined, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  return cloneObject(value, seen, depth + 1);
}
