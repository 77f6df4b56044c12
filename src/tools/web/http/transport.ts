import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { blockedAddressReason } from './address';

/** One HTTP exchange's answer: status, headers and (up to the byte cap) the decoded body. */
export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body was longer than the cap and was cut there. */
  truncated: boolean;
}

/** What {@link sendRequest} sends. */
export interface RawRequest {
  method: string;
  headers: Record<string, string>;
  body?: Buffer | undefined;
  /** Aborts the exchange (the socket is destroyed); the promise rejects with the signal's reason. */
  signal: AbortSignal;
  /** Bytes of (decompressed) body kept; the rest is not read. */
  maxBytes: number;
  /**
   * The request goes to a host a model chose: it is sent over {@link CHECKED_AGENTS} (never over a socket a
   * trusted request opened), host names resolve through {@link publicOnlyLookup}, and the socket's remote
   * address is checked once connected, before the request is written. @default false
   */
  checked?: boolean | undefined;
  /** Resolves host names (and may refuse them); {@link publicOnlyLookup} when `checked`, else Node's default. */
  lookup?: LookupFunction | undefined;
}

/** A host name that resolved to an address the fetch may not reach. */
export class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError' as const;
  readonly address: string;
  readonly reason: string;

  /** `connected` says the address is the one a socket reached, rather than one the name resolved to. */
  constructor(host: string, address: string, reason: string, connected = false) {
    super(
      connected ? `${host} connected to ${address}, ${reason}` : `${host} resolves to ${address}, ${reason}`,
    );
    this.address = address;
    this.reason = reason;
  }
}

/**
 * The agents of checked requests, apart from Node's global agents: an idle keep-alive socket that a trusted
 * request (an API's baseURL, a fetch allowed onto the private network) opened to an internal host is never
 * handed to a request a model chose, which would skip the lookup that refuses that host. Every socket in these
 * pools was opened by a checked request and passed the remote-address check.
 */
export const CHECKED_AGENTS = {
  http: new HttpAgent({ keepAlive: true }),
  https: new HttpsAgent({ keepAlive: true }),
} as const;

/**
 * Refuses `socket` (by destroying `request` with a {@link BlockedAddressError}) when the address it is connected
 * to is not public: at once for a reused socket, on `connect` for a new one. It is called from the request's
 * `socket` event, which comes before the request writes anything, and its `connect` listener is added before
 * the write that waits for the connection, so a refused socket never carries the request.
 */
function guardRemoteAddress(socket: Socket, host: string, destroy: (error: Error) => void): void {
  const verify = () => {
    const address = socket.remoteAddress;
    const reason =
      address === undefined ? 'an address that cannot be checked' : blockedAddressReason(address);
    if (reason !== undefined) destroy(new BlockedAddressError(host, address ?? 'unknown', reason, true));
  };
  if (socket.connecting) socket.once('connect', verify);
  else verify();
}

/**
 * A `lookup` for `http.request` that resolves every address of the name and refuses the connection when any
 * of them is not public. Because the socket connects to the address this function hands back, a DNS answer
 * that changes between the check and the connect (DNS rebinding) cannot slip through.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { family: options.family ?? 0, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const list = addresses ?? [];
    for (const entry of list) {
      const reason = blockedAddressReason(entry.address);
      if (reason !== undefined) {
        return callback(new BlockedAddressError(hostname, entry.address, reason), '', 0);
      }
    }
    const first = list[0];
    if (!first) {
      const empty = Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
      return callback(empty, '', 0);
    }
    // Node ≥ 20 may ask for every address (autoSelectFamily); answer in the shape it asked for.
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    callback(null, first.address, first.family);
  });
};

function decoded(response: Readable, encoding: string | undefined): Readable {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return response.pipe(createGunzip());
    case 'deflate':
      return response.pipe(createInflate());
    case 'br':
      return response.pipe(createBrotliDecompress());
    default:
      return response;
  }
}

/**
 * Sends one request with `node:http` / `node:https` (no redirects followed, no proxy) and reads at most
 * `maxBytes` of the decompressed body. Rejects on network errors, on a refused address (a
 * {@link BlockedAddressError}), and with the signal's reason on abort.
 */
export function sendRequest(url: URL, request: RawRequest): Promise<RawResponse> {
  return new Promise<RawResponse>((resolve, reject) => {
    const { signal } = request;
    if (signal.aborted) return reject(signal.reason);
    const secure = url.protocol === 'https:';
    const lookup = request.lookup ?? (request.checked ? publicOnlyLookup : undefined);
    const options: RequestOptions = {
      method: request.method,
      headers: request.headers,
      ...(lookup ? { lookup } : {}),
      ...(request.checked ? { agent: secure ? CHECKED_AGENTS.https : CHECKED_AGENTS.http } : {}),
    };
    const send = secure ? httpsRequest : httpRequest;
    let settled = false;
    let incoming: Readable | undefined;
    let decoder: Readable | undefined;
    const onAbort = () => {
      fail(signal.reason);
      outgoing.destroy();
      incoming?.destroy();
      decoder?.destroy();
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      reject(signal.aborted ? signal.reason : error);
    };
    const outgoing = send(url, options, (response) => {
      incoming = response;
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      const body = decoded(response, response.headers['content-encoding']);
      decoder = body;
      const finish = () => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks),
          truncated,
        });
      };
      body.on('data', (chunk: Buffer) => {
        if (settled || chunk.length === 0) return;
        const room = request.maxBytes - size;
        if (chunk.length > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room));
          size += room;
          truncated = true;
          finish();
          // The rest is not wanted: stop decompressing (a small body may expand to gigabytes) and drop the
          // connection instead of reading it.
          body.destroy();
          response.destroy();
          return;
        }
        // A chunk that fills the cap exactly leaves the question open: the next byte, if any, means the body
        // was cut there; the end means it was whole.
        chunks.push(chunk);
        size += chunk.length;
      });
      body.on('end', finish);
      body.on('error', fail);
      response.on('error', fail);
    });
    outgoing.on('error', fail);
    if (request.checked) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      outgoing.on('socket', (socket) => guardRemoteAddress(socket, host, (error) => outgoing.destroy(error)));
    }
    signal.addEventListener('abort', onAbort, { once: true });
    outgoing.end(request.body);
  });
}
