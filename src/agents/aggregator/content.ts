/** Message content as prompt text: strings as they are, tool results formatted, other values as JSON. */
export function contentToText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (
    typeof content === 'object' &&
    typeof (content as { formatResult?: unknown }).formatResult === 'function'
  ) {
    return (content as { formatResult(): string }).formatResult();
  }
  if (typeof content !== 'object') return String(content);
  try {
    return JSON.stringify(content) ?? String(content);
  } catch {
    return String(content);
  }
}
