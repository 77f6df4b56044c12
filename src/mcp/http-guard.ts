import type { IncomingMessage } from 'node:http';
import { bearerMatches, RequestGuard } from '../core/request-guard';
import { ConfigurationError } from '../schema/errors';

/** What a guard allows. */
export interface HTTPGuardOptions {
  /** The address the server binds. */
  host: string;
  /** More names the `Host` header may carry (port ignored); `'*'` allows any. */
  allowedHosts?: readonly string[] | undefined;
  /** Origins (`https://app.example`) whose pages may call the server; `'*'` allows any. */
  allowedOrigins?: readonly string[] | undefined;
  /** The bearer token every request needs, when set. */
  token?: string | undefined;
}

/** Why a request was refused. */
export interface Refusal {
  status: 401 | 403;
  message: string;
}

/**
 * Decides from its headers whether a request may reach the MCP server: `Host` and `Origin` as the HTTP agent
 * server checks them ({@link RequestGuard}: a web page cannot drive the server), and with a token,
 * `Authorization: Bearer <token>` (compared in constant time).
 */
export class HTTPGuard {
  readonly #guard: RequestGuard;
  readonly #token: Buffer | undefined;

  constructor(options: HTTPGuardOptions) {
    if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length === 0)) {
      throw new ConfigurationError({ message: 'serveMCP: token must be a non-empty string' });
    }
    this.#token = options.token === undefined ? undefined : Buffer.from(options.token);
    this.#guard = new RequestGuard({
      host: options.host,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
      owner: 'serveMCP',
    });
  }

  /** Whether the request may go on; a {@link Refusal} when not. */
  check(request: IncomingMessage): Refusal | undefined {
    const { host, origin, authorization } = request.headers;
    const refusal = this.#guard.check(host, origin);
    if (refusal) return { status: refusal.status, message: refusal.detail };
    if (this.#token !== undefined && !bearerMatches(authorization, this.#token)) {
      return { status: 401, message: 'a valid bearer token is required' };
    }
    return undefined;
  }
}
