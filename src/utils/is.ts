/** True for any object with a callable `then` (a Promise or a foreign thenable). */
export function isThenable<T = unknown>(value: unknown): value is PromiseLike<T> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** True for a sync or async iterator (what a generator function returns). */
export function isIterator(value: unknown): value is Iterator<unknown> | AsyncIterator<unknown> {
  return (
    value !== null && typeof value === 'object' && typeof (value as { next?: unknown }).next === 'function'
  );
}

/** True for async iterators (what an async generator function returns: an async streaming agent's call). */
export function isAsyncIterator(value: unknown): value is AsyncIterator<unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    Symbol.asyncIterator in value &&
    typeof (value as { next?: unknown }).next === 'function'
  );
}

/** True for `{}`-style objects: no class prototype. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
