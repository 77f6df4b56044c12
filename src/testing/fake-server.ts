import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registerSameThreadServer } from '../bridge/same-thread';

/**
 * What the fake model servers (`startFakeOpenAI`, `startFakeAnthropic`) share: reading bodies, waits that
 * notice a client leaving, stop words, the scripted replies, and a loopback server that closes cleanly.
 */

/**
 * The request body as text, or undefined once it is longer than `limit` (by its content-length, or as soon as
 * the bytes received pass it: what follows is dropped, never kept).
 */
export function readBody(request: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      resolve(undefined);
      return;
    }
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    request.on('data', (part: Buffer) => {
      if (over) return;
      size += part.length;
      if (size > limit) {
        over = true;
        parts.length = 0;
        resolve(undefined);
      } else parts.push(part);
    });
    request.on('end', () => {
      if (!over) resolve(Buffer.concat(parts).toString('utf8'));
    });
    // A client that goes away mid-body: there is nothing left to answer.
    request.on('error', () => resolve(undefined));
  });
}

/** The text before the first stop word, and the word that cut it (null when none did). */
export function cutAtStop(text: string, stop: unknown): { text: string; sequence: string | null } {
  const words = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : [];
  let end = text.length;
  let sequence: string | null = null;
  for (const word of words) {
    if (typeof word !== 'string' || word.length === 0) continue;
    const index = text.indexOf(word);
    if (index !== -1 && index < end) {
      end = index;
      sequence = word;
    }
  }
  return { text: text.slice(0, end), sequence };
}

/** A rough token count (four characters a token), for usage figures. */
export function countTokens(value: unknown): number {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return Math.ceil(text.length / 4);
}

/** A fake's script: one reply for every request, a list (one per request, in order), or a function. */
export type Script<Q, R> =
  | string
  | R
  | readonly (string | R)[]
  | ((request: Q, index: number) => string | R | Promise<string | R>);

/**
 * The reply the script gives request number `index` (text becomes `{ content }`); past the end of a list,
 * `missing(length)`, the error the fake answers with.
 */
export async function scriptedReply<Q, R extends object>(
  script: Script<Q, R>,
  request: Q,
  index: number,
  missing: (length: number) => R,
): Promise<R | { content: string }> {
  let reply: string | R | undefined;
  if (typeof script === 'function') reply = await script(request, index);
  else if (Array.isArray(script)) {
    reply = (script as readonly (string | R)[])[index];
    if (reply === undefined) return missing(script.length);
  } else reply = script as string | R;
  return typeof reply === 'string' ? { content: reply } : reply;
}

/** A fake server on 127.0.0.1 and the timers of its pending waits. */
export interface LoopbackServer {
  url: string;
  /**
   * Waits `ms`; false when the client left meanwhile. Leaves no listener behind (streams wait once per
   * event), and `close()` clears what is still pending.
   */
  wait(ms: number, response: ServerResponse): Promise<boolean>;
  /** Stops listening, drops every connection and clears the pending waits. */
  close(): Promise<void>;
}

/**
 * Serves `handle` on 127.0.0.1 (`port`, default a free one). A handler that throws is answered with a 500
 * whose body is `failure(error)`. The port is registered as served by this thread, so that a sync client on
 * this thread that times out says why (`label` names the fake).
 */
export async function serveOnLoopback(
  handle: (incoming: IncomingMessage, response: ServerResponse, server: LoopbackServer) => Promise<void>,
  port: number | undefined,
  label: string,
  failure: (error: unknown) => string,
): Promise<LoopbackServer> {
  const timers = new Set<NodeJS.Timeout>();
  const wait = (ms: number, response: ServerResponse) =>
    new Promise<boolean>((resolve) => {
      if (ms <= 0) {
        resolve(!response.destroyed);
        return;
      }
      const onClose = () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        timers.delete(timer);
        response.off('close', onClose);
        resolve(!response.destroyed);
      }, ms);
      timers.add(timer);
      response.once('close', onClose);
    });
  let loopback: LoopbackServer | undefined;
  const server = createServer((incoming, response) => {
    handle(incoming, response, loopback!).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(failure(error));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port ?? 0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A sync client on this thread cannot be answered by this server: its timeout error will say so.
  const unregister = registerSameThreadServer((server.address() as AddressInfo).port, label);
  loopback = {
    url,
    wait,
    close() {
      unregister();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  return loopback;
}
