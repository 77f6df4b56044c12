/** Identifies a conversation; sessions are compared by `String(sessionId)`. Default `0`. */
export type SessionId = string | number;

/**
 * What sessions are compared by: `String(sessionId)`'s value, held as a number for the small
 * non-negative integers (ids such as `7` and `'7'`), which maps hash and compare without making a string.
 * Two ids give the same key exactly when their `String()`s are equal.
 */
export type SessionKey = string | number;

/** The largest id kept as a number (a small integer to V8). */
const MAX_NUMERIC_KEY = 0x3fffffff;

/** The {@link SessionKey} of a session id. */
export function sessionKey(sessionId: SessionId): SessionKey {
  if (typeof sessionId === 'number') {
    return Number.isInteger(sessionId) && sessionId >= 0 && sessionId <= MAX_NUMERIC_KEY
      ? sessionId
      : String(sessionId);
  }
  if (typeof sessionId !== 'string') return String(sessionId);
  // A string that is the canonical decimal of such a number ('7', not '07' or '7.0') is that number.
  const length = sessionId.length;
  if (length === 0 || length > 10) return sessionId;
  let value = 0;
  for (let i = 0; i < length; i++) {
    const digit = sessionId.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9 || (digit === 0 && i === 0 && length > 1)) return sessionId;
    value = value * 10 + digit;
  }
  return value <= MAX_NUMERIC_KEY ? value : sessionId;
}
