import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { networkInterfaces } from 'node:os';
import { ConfigurationError } from '../schema/errors';

/**
 * Which HTTP requests the MCP server answers, so that a web page cannot drive it: a page on another site can
 * send a cross-site request to a server on the visitor's machine (it carries that site's `Origin`), and a page
 * whose DNS name is rebound to 127.0.0.1 is even same-origin with it (its own name is in `Host`). Clients
 * outside a browser send neither header that way. With a token, every request needs it as well.
 */

/** Host names that always mean this machine. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];
/** Addresses that bind every interface: any of the machine's own addresses reaches the server. */
const WILDCARD = new Set(['0.0.0.0', '::', '']);

/** True for a host name or address that only this machine reaches. */
export function isLoopback(host: string): boolean {
  const name = host.replace(/^\[|\]$/g, '').toLowerCase();
  return LOOPBACK_NAMES.includes(name) || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/** A host name without brackets, lower-cased; undefined when the header is not a host. */
function hostnameOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  try {
    return new URL(`http://${header}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return undefined;
  }
}

/** An origin in its canonical form (`scheme://host[:port]`, lower-cased, default port dropped), or `'null'`. */
function canonicalOrigin(value: string): string | undefined {
  if (value === 'null') return value;
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

function listOf(name: string, value: readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item.length === 0)) {
    throw new ConfigurationError({ message: `serveMCP: ${name} must be an array of non-empty strings` });
  }
  return value;
}

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
 * Decides from its headers whether a request may reach the MCP server: `Host` must be a loopback name, the
 * bound host (any of the machine's addresses when it binds them all) or an `allowedHosts` entry; `Origin`,
 * when a browser sent one, must be in `allowedOrigins`; with a token, `Authorization: Bearer <token>` must
 * carry it (compared in constant time).
 */
export class HTTPGuard {
  readonly #hosts = new Set(LOOPBACK_NAMES);
  readonly #anyHost: boolean;
  readonly #origins = new Set<string>();
  readonly #anyOrigin: boolean;
  readonly #token: Buffer | undefined;

  constructor(options: HTTPGuardOptions) {
    const hosts = listOf('allowedHosts', options.allowedHosts);
    const origins = listOf('allowedOrigins', options.allowedOrigins);
    if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length === 0)) {
      throw new ConfigurationError({ message: 'serveMCP: token must be a non-empty string' });
    }
    this.#token = options.token === undefined ? undefined : Buffer.from(options.token);
    this.#anyHost = hosts.includes('*');
    this.#anyOrigin = origins.includes('*');
    const bound = options.host.replace(/^\[|\]$/g, '').toLowerCase();
    if (WILDCARD.has(bound)) {
      for (const addresses of Object.values(networkInterfaces())) {
        for (const address of addresses ?? []) this.#hosts.add(address.address.toLowerCase());
      }
    } else {
      this.#hosts.add(bound);
    }
    for (const host of hosts) {
      if (host === '*') continue;
      const name = hostnameOf(host);
      if (name === undefined)
        throw new ConfigurationError({ message: `serveMCP: bad host in allowedHosts: ${host}` });
      this.#hosts.add(name);
    }
    for (const origin of origins) {
      if (origin === '*') continue;
      const canonical = canonicalOrigin(origin);
      if (canonical === undefined) {
        throw new ConfigurationError({
          message: `serveMCP: bad origin in allowedOrigins: ${origin} (expected e.g. https://app.example)`,
        });
      }
      this.#origins.add(canonical);
    }
  }

  /** Whether the request may go on; a {@link Refusal} when not. */
  check(request: IncomingMessage): Refusal | undefined {
    const { host, origin, authorization } = request.headers;
    if (!this.#anyHost) {
      const name = hostnameOf(host);
      if (name === undefined || !this.#hosts.has(name)) {
        return {
          status: 403,
          message: `the Host header ${JSON.stringify(host ?? '')} is not this server's address; list the name in allowedHosts to accept it`,
        };
      }
    }
    if (origin !== undefined && !this.#anyOrigin) {
      const canonical = canonicalOrigin(origin);
      if (canonical === undefined || !this.#origins.has(canonical)) {
        return {
          status: 403,
          message: `requests from web pages of ${JSON.stringify(origin)} are not allowed; list the origin in allowedOrigins to accept them`,
        };
      }
    }
    if (this.#token !== undefined && !authorized(authorization, this.#token)) {
      return { status: 401, message: 'a valid bearer token is required' };
    }
    return undefined;
  }
}

/** Compares a bearer header with the token in constant time. */
function authorized(header: string | undefined, expected: Buffer): boolean {
  if (header === undefined) return false;
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match) return false;
  const given = Buffer.from(match[1]!.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
