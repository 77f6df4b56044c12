/**
 * A copy of `items` with room for `extra` more pushes before it grows. An array that is pushed past its
 * size reserves 16 more slots; for the few-element arrays built on every call (a prompt, say) that is
 * most of what they allocate.
 */
export function withRoom<T>(items: readonly T[], extra: number): T[] {
  const length = items.length;
  const out = new Array<T>(length + extra);
  for (let i = 0; i < length; i++) out[i] = items[i]!;
  // Shortening keeps the reserved slots (V8 only trims when most of them would go unused).
  out.length = length;
  return out;
}
