import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { ConfigurationError } from '../schema/errors';

/**
 * Which requests a server answers by their `Host` and `Origin` headers, so that a web page cannot drive it:
 * a page on another site can send a "simple" cross-site request (no preflight) to a server on the visitor's
 * machine, and a page whose DNS name is rebound to 127.0.0.1 is even same-origin with it. The first carries
 * that site's `Origin`, the second its own name in `Host`; clients outside a browser send neither header
 * that way.
 */

/** Host names that always mean this machine. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/** Whether an address to bind (or a host name) is reachable only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/** Whether an `Authorization` header carries `Bearer <token>`, compared in constant time. */
export function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  if (header === undefined) return false;
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match) return false;
  const given = Buffer.from(match[1]!.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Addresses that bind every interface: any of the machine's own addresses reaches the server. */
const WILDCARD = new Set(['0.0.0.0', '::', '']);

/** What a guard allows, besides the loopback names and the bound host. */
export interface RequestGuardOptions {
  /** The address the server binds. */
  host: string;
  /** More names the `Host` header may carry (port ignored); `'*'` allows any. */
  allowedHosts?: readonly string[] | undefined;
  /** Origins (`https://app.example`) whose pages may call the server; `'*'` allows any. */
  allowedOrigins?: readonly string[] | undefined;
  /** The owner's name, for error messages. */
  owner: string;
}

/** Why a request was refused: the status to answer and a sentence for `detail`. */
export interface Refusal {
  status: 403;
  code: 'HostNotAllowed' | 'OriginNotAllowed';
  detail: string;
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
    const url = new URL(value);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

function listOf(name: string, value: readonly string[] | undefined, owner: string): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item.length === 0)) {
    throw new ConfigurationError({ message: `${owner}: ${name} must be an array of non-empty strings` });
  }
  return value;
}

/**
 * Decides, from its `Host` and `Origin` headers, whether a request may reach the server. `Host` must name this
 * machine as a loopback name, the bound host (any of the machine's addresses when it binds them all), or an
 * `allowedHosts` entry; `Origin`, when a browser sent one, must be in `allowedOrigins`.
 */
export class RequestGuard {
  readonly #hosts: Set<string>;
  readonly #anyHost: boolean;
  readonly #origins: Set<string>;
  readonly #anyOrigin: boolean;

  constructor(options: RequestGuardOptions) {
    const hosts = listOf('allowedHosts', options.allowedHosts, options.owner);
    const origins = listOf('allowedOrigins', options.allowedOrigins, options.owner);
    this.#anyHost = hosts.includes('*');
    this.#anyOrigin = origins.includes('*');
    this.#hosts = new Set(LOOPBACK_NAMES);
    const bound = options.host.replace(/^\[|\]$/g, '').toLowerCase();
    if (WILDCARD.has(bound)) {
      this.#hosts.add(hostname().toLowerCase());
      for (const addresses of Object.values(networkInterfaces())) {
        for (const address of addresses ?? []) this.#hosts.add(address.address.toLowerCase());
      }
    } else {
      this.#hosts.add(bound);
    }
    for (const host of hosts) {
      if (host === '*') continue;
      const name = hostnameOf(host);
      if (name === undefined) {
        throw new ConfigurationError({
          message: `${options.owner}: allowedHosts has a bad host name: ${host}`,
        });
      }
      this.#hosts.add(name);
    }
    this.#origins = new Set();
    for (const origin of origins) {
      if (origin === '*') continue;
      const canonical = canonicalOrigin(origin);
      if (canonical === undefined) {
        throw new ConfigurationError({
          message: `${options.owner}: allowedOrigins has a bad origin: ${origin} (expected e.g. https://app.example)`,
        });
      }
      this.#origins.add(canonical);
    }
  }

  /** Whether the guard lets browsers in at all (some origin is allowed), so CORS headers are worth sending. */
  get allowsBrowsers(): boolean {
    return this.#anyOrigin || this.#origins.size > 0;
  }

  /** Whether a request with these headers may go on; a {@link Refusal} when not. */
  check(host: string | undefined, origin: string | undefined): Refusal | undefined {
    if (!this.#anyHost) {
      const name = hostnameOf(host);
      if (name === undefined || !this.#hosts.has(name)) {
        return {
          status: 403,
          code: 'HostNotAllowed',
          detail: `the Host header ${JSON.stringify(host ?? '')} is not this server's address; list the name in allowedHosts to accept it`,
        };
      }
    }
    if (origin !== undefined && !this.originAllowed(origin)) {
      return {
        status: 403,
        code: 'OriginNotAllowed',
        detail: `requests from web pages of ${JSON.stringify(origin)} are not allowed; list the origin in allowedOrigins to accept them`,
      };
    }
    return undefined;
  }

  /** Whether a page of this origin may call the server. */
  originAllowed(origin: string): boolean {
    if (this.#anyOrigin) return true;
    const canonical = canonicalOrigin(origin);
    return canonical !== undefined && this.#origins.has(canonical);
  }
}
