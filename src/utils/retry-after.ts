/**
 * Milliseconds a `Retry-After` header value asks to wait: delay-seconds (`'120'`, `'1.5'`) or an HTTP date;
 * `undefined` when absent or unreadable. A date in the past means 0.
 *
 * @example
 * parseRetryAfter('2'); // 2000
 * parseRetryAfter(new Date(Date.now() + 5000).toUTCString()); // about 5000
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number.parseFloat(text) * 1000;
  // An HTTP date names its day and month; without letters, Date.parse reads '-1' as the year -1.
  if (!/[a-z]/i.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * How long a response's headers ask to wait before a retry: `retry-after-ms` (milliseconds, as OpenAI and
 * Anthropic send it) or `retry-after` (seconds or an HTTP date); `undefined` when neither is present and sane.
 */
export function retryAfterMs(headers: { get(name: string): string | null } | undefined): number | undefined {
  if (headers === undefined) return undefined;
  const milliseconds = headers.get('retry-after-ms')?.trim() ?? '';
  if (/^\d+(\.\d+)?$/.test(milliseconds)) return Number.parseFloat(milliseconds);
  return parseRetryAfter(headers.get('retry-after'));
}
