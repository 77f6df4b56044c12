/** The longest title the web tools pass on, in characters (the ellipsis included). */
export const MAX_TITLE_CHARS = 256;

/**
 * `text` cut to at most `max` characters, ending with `…` when it was cut; a surrogate pair is never split.
 *
 * @example
 * clip('a very long headline', 10); // 'a very lo…'
 */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/**
 * The first `max` items joined with `, `, then how many more there were: a list a model reads, kept short
 * whatever its length.
 *
 * @example
 * listSome([1, 2, 3, 4], 2); // '1, 2 (and 2 more)'
 */
export function listSome(items: readonly unknown[], max: number): string {
  const shown = items.slice(0, max).join(', ');
  return items.length > max ? `${shown} (and ${items.length - max} more)` : shown;
}
