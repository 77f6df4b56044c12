import { isPlainObject } from './is';

/**
 * Deep-copies message payloads. Strings and other primitives are returned as they are (no allocation on
 * the hot path); arrays and plain objects are copied member by member; an object with its own `clone()`
 * (AgentMessage, ActionReturn) is asked to copy itself; other class instances keep their prototype.
 * Cycles are preserved. A `"__proto__"` key (as `JSON.parse` makes one) stays an own data property of the
 * copy; it never becomes the copy's prototype. Never throws: an object that cannot be read (a Proxy whose
 * traps throw) is kept as it is rather than copied.
 */
export function deepClone<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  return cloneObject(value as object, undefined) as T;
}

/** Sets `copy[key]`, keeping a `"__proto__"` key as data instead of calling the prototype setter. */
function put(copy: Record<string, unknown>, key: string, item: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
  } else copy[key] = item;
}

function cloneObject(value: object, seen: Map<object, unknown> | undefined): unknown {
  const existing = seen?.get(value);
  if (existing !== undefined) return existing;
  try {
    if (Array.isArray(value)) {
      const copy: unknown[] = new Array(value.length);
      seen ??= new Map();
      seen.set(value, copy);
      for (let i = 0; i < value.length; i++) copy[i] = cloneValue(value[i], seen);
      return copy;
    }
    if (isPlainObject(value)) {
      const copy: Record<string, unknown> = Object.getPrototypeOf(value) === null ? Object.create(null) : {};
      seen ??= new Map();
      seen.set(value, copy);
      for (const key of Object.keys(value)) put(copy, key, cloneValue(value[key], seen));
      return copy;
    }
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
    const copy = Object.create(Object.getPrototypeOf(value)) as Record<string, unknown>;
    seen ??= new Map();
    seen.set(value, copy);
    for (const key of Object.keys(value))
      put(copy, key, cloneValue((value as Record<string, unknown>)[key], seen));
    return copy;
  } catch {
    seen?.set(value, value);
    return value;
  }
}

function cloneValue(value: unknown, seen: Map<object, unknown>): unknown {
  if (value === null || typeof value !== 'object') return value;
  return cloneObject(value, seen);
}
