import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the fake server received (its body read in full before the handler runs). */
export interface RecordedRequest {
  method: string;
  /** The path without the query, e.g. `/v7.0/search`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: string;
  /** `Date.now()` when the request arrived. */
  at: number;
  /** Set when the client went away before the answer was complete (e.g. an aborted request). */
  clientLeft: boolean;
}

/**
 * Answers one request; `index` counts requests to this server from 0. A handler that throws (or rejects)
 * answers 599 with the error, or drops the connection when the answer had begun.
 */
export type FakeHandler = (request: RecordedRequest, response: ServerResponse, index: number) => unknown;

/** A scripted answer. */
export type Reply =
  | { status: number; json: unknown; headers?: Record<string, string> | undefined }
  | { status: number; text: string; headers?: Record<string, string> | undefined }
  /** Never answers (the connection stays open until the client gives up or the server closes). */
  | { hang: true };

/** A real HTTP server on 127.0.0.1 that records what it receives. */
export interface FakeHttpServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Replaces the handler (the request count goes on). */
  setHandler(handler: FakeHandler): void;
  /** Answers the next requests with `replies`, in order, before the handler answers again. */
  queue(...replies: Reply[]): void;
  /** Stops listening and drops every open connection (keep-alive and hanging ones included). */
  close(): Promise<void>;
}

/** Sends a JSON answer (a string body is sent as it is, e.g. to send broken JSON). */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(text);
}

/** Sends a scripted answer: JSON, plain text, or nothing at all (`hang`). */
export function sendReply(response: ServerResponse, reply: Reply): void {
  if ('hang' in reply) return;
  if ('json' in reply) {
    sendJson(response, reply.status, JSON.stringify(reply.json), reply.headers);
  } else {
    response.writeHead(reply.status, { 'content-type': 'text/plain; charset=utf-8', ...reply.headers });
    response.end(reply.text);
  }
}

/** A handler that answers each request with the reply `route` picks for it (e.g. a fake service's routes). */
export function replyWith(route: (request: RecordedRequest) => Reply): FakeHandler {
  return (request, response) => sendReply(response, route(request));
}

/**
 * Starts a fake server on 127.0.0.1 (a free port) answering with `handler`.
 *
 * @example
 * const server = await startFakeHttp((request, response) => sendJson(response, 200, { ok: true }));
 * server.queue({ status: 429, json: { error: 'slow down' }, headers: { 'retry-after': '1' } });
 * await server.close();
 */
export async function startFakeHttp(handler: FakeHandler): Promise<FakeHttpServer> {
  let current = handler;
  const requests: RecordedRequest[] = [];
  const queued: Reply[] = [];
  const server = createServer((incoming: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://127.0.0.1');
      const recorded: RecordedRequest = {
        method: incoming.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
        clientLeft: false,
      };
      response.on('close', () => {
        if (!response.writableFinished) recorded.clientLeft = true;
      });
      const index = requests.length;
      requests.push(recorded);
      const reply = queued.shift();
      if (reply) {
        sendReply(response, reply);
        return;
      }
      Promise.resolve()
        .then(() => current(recorded, response, index))
        .catch((error: unknown) => {
          if (!response.headersSent) sendJson(response, 599, { error: String(error) });
          else response.destroy();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    setHandler(next) {
      current = next;
    },
    queue(...replies) {
      queued.push(...replies);
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
