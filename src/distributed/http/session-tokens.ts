import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ConfigurationError } from '../../schema/errors';

/*
 * Session tokens: a server with a `token` can mint tokens that act for one session only, for a browser or a
 * user who should reach their own conversation and runs and nothing else. A session token is
 * `lgs1.<session id, base64url>.<expiry in epoch ms, 0 for none>.<signature>`, signed with a key made from
 * the server's token (HMAC-SHA256): the server keeps no list of them, and changing its token revokes them all.
 * Routes take one only when they say they are scoped to a session (their `config.sessionScoped`), and then
 * only for that session; every other route refuses it (403).
 */

const PREFIX = 'lgs1';

/** The signing key of a server's session tokens. */
export function sessionTokenKey(token: Buffer): Buffer {
  return createHash('sha256').update('lagent-ts session token\u0000').update(token).digest();
}

/** A token for `sessionId`, valid until `expiresAt` (epoch ms) when given. */
export function mintSessionToken(key: Buffer, sessionId: string, expiresAt?: number): string {
  if (typeof sessionId !== 'string' || sessionId === '') {
    throw new ConfigurationError({ message: 'sessionToken: the session id must be a non-empty string' });
  }
  if (expiresAt !== undefined && !(Number.isSafeInteger(expiresAt) && expiresAt > 0)) {
    throw new ConfigurationError({ message: 'sessionToken: expiresAt must be epoch ms' });
  }
  const body = `${PREFIX}.${Buffer.from(sessionId).toString('base64url')}.${expiresAt ?? 0}`;
  return `${body}.${sign(key, body)}`;
}

/** The session a bearer token is for, when it is a valid, unexpired session token of this key. */
export function sessionOfToken(
  key: Buffer,
  header: string | undefined,
  now = Date.now(),
): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(lgs1\.[A-Za-z0-9_-]*\.\d{1,16}\.[A-Za-z0-9_-]{43})\s*$/i.exec(header);
  if (!match) return undefined;
  const token = match[1]!;
  const cut = token.lastIndexOf('.');
  const body = token.slice(0, cut);
  const given = Buffer.from(token.slice(cut + 1));
  const expected = Buffer.from(sign(key, body));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const [, session, expiry] = body.split('.');
  const expiresAt = Number(expiry);
  if (expiresAt !== 0 && expiresAt <= now) return undefined;
  return Buffer.from(session!, 'base64url').toString();
}

function sign(key: Buffer, body: string): string {
  return createHmac('sha256', key).update(body).digest('base64url');
}

/** The session each request's token is scoped to (requests with the server's own token have none). */
const scopes = new WeakMap<IncomingMessage, string>();

/** Marks a request as made with a token for `sessionId`. */
export function scopeRequest(request: IncomingMessage, sessionId: string): void {
  scopes.set(request, sessionId);
}

/** The session a request's token is scoped to, or undefined for a request that may use any session. */
export function requestScope(request: IncomingMessage): string | undefined {
  return scopes.get(request);
}

/** The refusal of a session token used for another session. */
export const OTHER_SESSION = 'this token is for another session';
