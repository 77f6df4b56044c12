import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the fake received. */
export interface ReceivedRequest {
  method: string;
  /** Path without the query. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: string;
  /** `Date.now()` on arrival. */
  at: number;
}

/** How the fake answers one request. */
export type Reply =
  | { status: number; json: unknown; headers?: Record<string, string> | undefined }
  | { status: number; text: string; headers?: Record<string, string> | undefined }
  /** Never answers (the connection stays open until the client gives up or the server closes). */
  | { hang: true };

/** Answers a request as the real service would. */
export type Route = (request: ReceivedRequest) => Reply;

/** A real HTTP server on 127.0.0.1 standing in for a service. */
export interface FakeService {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Answers the next requests with `replies`, in order, before the service's own routes answer again. */
  queue(...replies: Reply[]): void;
  /** Stops listening and drops every connection, hanging ones included. */
  close(): Promise<void>;
}

/** Starts a fake service on a free port of 127.0.0.1. */
export async function startFakeService(route: Route): Promise<FakeService> {
  const requests: ReceivedRequest[] = [];
  const queued: Reply[] = [];
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://127.0.0.1');
      const request: ReceivedRequest = {
        method: incoming.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(request);
      send(response, queued.shift() ?? route(request));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    queue: (...replies) => {
      queued.push(...replies);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, reply: Reply): void {
  if ('hang' in reply) return;
  const isJson = 'json' in reply;
  response.writeHead(reply.status, {
    'content-type': isJson ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
    ...reply.headers,
  });
  response.end(isJson ? JSON.stringify(reply.json) : reply.text);
}

/** The API key every fake accepts. */
export const GOOD_KEY = 'test-key';
