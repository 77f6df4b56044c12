import http from 'node:http';
import type { Socket } from 'node:net';
import { type AgentMessage, TimeoutError } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentError } from 'lagent-ts/distributed';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * The clients against servers that misbehave: oversized, silent, oddly framed or broken answers, and a server
 * that cuts a reused connection after it read the request. Every failure is an HTTPAgentError (or a
 * TimeoutError for a deadline), never a raw error or a crash of the caller.
 */

const started: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

/** A node:http server on 127.0.0.1 running `handler`; its sockets are destroyed when the test ends. */
async function hostile(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  started.push({
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

function client(url: string, options: Partial<ConstructorParameters<typeof AsyncHTTPAgentClient>[0]> = {}) {
  const remote = new AsyncHTTPAgentClient({ url, ...options });
  started.push(remote);
  return remote;
}

const message = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ content, sender: 'hostile', stream_state: 0, ...extra });

async function collect(
  stream: AsyncGenerator<AgentMessage, AgentMessage>,
): Promise<{ seen: AgentMessage[]; error: unknown }> {
  const seen: AgentMessage[] = [];
  try {
    for await (const chunk of stream) seen.push(chunk);
    return { seen, error: undefined };
  } catch (error) {
    return { seen, error };
  }
}

describe('HTTP clients: response size', () => {
  it('an answer larger than maxResponseBytes is an HTTPAgentError, announced or not', async () => {
    const big = message('x'.repeat(3_000_000));
    const url = await hostile((request, response) => {
      request.resume();
      if (request.url === '/chat_completion') response.writeHead(200, { 'content-type': 'application/json' });
      else
        response.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(big),
        });
      response.end(big);
    });
    const remote = client(url, { maxResponseBytes: 1_000_000 });
    for (const call of [() => remote.call('hi'), () => remote.stateDict(1)]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(HTTPAgentError);
      expect((error as Error).message).toMatch(/larger than maxResponseBytes \(1000000 bytes\)/);
    }
    // Within the limit, the same answer is read.
    expect((await client(url, { maxResponseBytes: 4_000_000 }).call('hi')).content).toHaveLength(3_000_000);
  });

  it('an endless answer stops at the default limit (64 MiB) instead of exhausting the caller', async () => {
    let sent = 0;
    const block = Buffer.alloc(1 << 20, 0x61);
    const url = await hostile((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' });
      const pump = () => {
        while (sent < 400 * block.length && !response.destroyed) {
          sent += block.length;
          if (!response.write(block)) return void response.once('drain', pump);
        }
        response.end();
      };
      pump();
    });
    const error = await client(url)
      .call('hi')
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HTTPAgentError);
    expect((error as Error).message).toMatch(/maxResponseBytes \(67108864 bytes\)/);
    expect(sent).toBeLessThan(200 * block.length);
  });
});

describe('HTTP clients: stream() deadlines, framing and bad events', () => {
  const sse =
    (write: (response: http.ServerResponse) => void): http.RequestListener =>
    (request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.flushHeaders();
      write(response);
    };

  it('headers then silence ends at the timeout (the first event is waited for, not just headers)', async () => {
    // The server never sends an event: only the client's timeout ends the stream.
    const url = await hostile(sse(() => undefined));
    const { seen, error } = await collect(client(url, { timeout: 300 }).stream('hi'));
    expect(seen).toEqual([]);
    expect(error).toBeInstanceOf(TimeoutError);
  });

  it('silence after an event ends at idleTimeout', async () => {
    const url = await hostile(
      sse((response) => response.write(`event: chunk\ndata: ${message('par', { stream_state: 1 })}\n\n`)),
    );
    const { seen, error } = await collect(client(url, { idleTimeout: 300 }).stream('hi'));
    expect(seen.map((chunk) => chunk.content)).toEqual(['par']);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeoutMs).toBe(300);
  });

  /** Writes an SSE comment every 10 ms until the client goes (or 5 s pass). */
  const commentsOnly = (first?: string) =>
    sse((response) => {
      if (first !== undefined) response.write(first);
      const timer = setInterval(() => response.write(': keep-alive\n\n'), 10);
      const end = () => {
        clearInterval(timer);
        response.end();
      };
      const limit = setTimeout(end, 5_000);
      response.once('close', () => {
        clearTimeout(limit);
        clearInterval(timer);
      });
    });

  it('a stream that sends only comments ends at the timeout: comments are not events', async () => {
    const url = await hostile(commentsOnly());
    const { seen, error } = await collect(client(url, { timeout: 300 }).stream('hi'));
    expect(seen).toEqual([]);
    expect(error).toBeInstanceOf(TimeoutError);
  });

  it('comments after an event do not hold off idleTimeout', async () => {
    const url = await hostile(commentsOnly(`event: chunk\ndata: ${message('par', { stream_state: 1 })}\n\n`));
    const { seen, error } = await collect(client(url, { idleTimeout: 300 }).stream('hi'));
    expect(seen.map((chunk) => chunk.content)).toEqual(['par']);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeoutMs).toBe(300);
  });

  it('CRLF- and CR-framed events are read like LF ones, however the bytes are split', async () => {
    const text =
      `: a comment\r\nevent: chunk\r\ndata: ${message('pa', { stream_state: 1 })}\r\n\r\n` +
      `event: delta\rdata: ${message('r', { stream_state: 1 })}\r\r` +
      `event: message\r\ndata: ${message('part')}\r\n\r\n`;
    const url = await hostile(
      sse((response) => {
        // One byte at a time, so a CR and its LF arrive apart.
        const bytes = Buffer.from(text);
        let i = 0;
        const next = () => {
          if (i >= bytes.length) return void response.end();
          response.write(bytes.subarray(i, ++i), next);
        };
        next();
      }),
    );
    const { seen, error } = await collect(client(url).stream('hi'));
    expect(error).toBeUndefined();
    expect(seen.map((chunk) => [chunk.content, chunk.delta])).toEqual([
      ['pa', 'pa'],
      ['par', 'r'],
      ['part', 't'],
    ]);
  });

  it('an event that never ends is cut at maxResponseBytes', async () => {
    let sent = 0;
    const url = await hostile(
      sse((response) => {
        response.write('event: chunk\r\ndata: "');
        const block = 'a'.repeat(64 * 1024);
        const pump = () => {
          while (sent < 100 * block.length && !response.destroyed) {
            sent += block.length;
            if (!response.write(block)) return void response.once('drain', pump);
          }
        };
        pump();
      }),
    );
    const { error } = await collect(client(url, { maxResponseBytes: 200_000 }).stream('hi'));
    expect(error).toBeInstanceOf(HTTPAgentError);
    expect((error as Error).message).toMatch(/event larger than maxResponseBytes \(200000 bytes\)/);
  });

  it('bad JSON in an event, or a connection cut mid-stream, is an HTTPAgentError', async () => {
    const badJSON = await hostile(sse((response) => response.end('event: chunk\ndata: {"content": \n\n')));
    const bad = await collect(client(badJSON).stream('hi'));
    expect(bad.error).toBeInstanceOf(HTTPAgentError);
    expect((bad.error as Error).message).toMatch(/not JSON/);

    const cut = await hostile(
      sse((response) => {
        response.write(`event: chunk\ndata: ${message('par', { stream_state: 1 })}\n\n`);
        setTimeout(() => response.socket?.destroy(), 50);
      }),
    );
    const broken = await collect(client(cut).stream('hi'));
    expect(broken.seen).toHaveLength(1);
    expect(broken.error).toBeInstanceOf(HTTPAgentError);
  });
});

describe('HTTP clients: a POST that may have reached the server is never sent again', () => {
  /** A server that answers a connection's first request, then reads the next one whole and cuts the connection. */
  async function cutsReusedConnections(answer: (request: http.IncomingMessage) => string) {
    const arrivals: string[] = [];
    const seen = new WeakSet<Socket>();
    const url = await hostile((request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (part: string) => {
        body += part;
      });
      request.on('end', () => {
        arrivals.push(`${request.method} ${request.url} ${body}`);
        if (seen.has(request.socket)) {
          request.socket.destroy();
          return;
        }
        seen.add(request.socket);
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(answer(request));
      });
    });
    return { url, arrivals };
  }

  it('a reused connection cut after the request was read: one arrival, and a clear error', async () => {
    const { url, arrivals } = await cutsReusedConnections(() => message('ok'));
    const remote = client(url, { retries: 3, retryDelay: 10 });
    expect((await remote.call('first')).content).toBe('ok');
    const error = await remote.call('second').catch((caught: unknown) => caught);
    expect(arrivals.filter((line) => line.includes('second'))).toHaveLength(1);
    expect(error).toBeInstanceOf(HTTPAgentError);
    expect((error as Error).message).toMatch(/may have received it, so it was not sent again/);
    expect((error as HTTPAgentError).status).toBeUndefined();
  });

  it('a GET on such a connection is sent again (reading twice is harmless)', async () => {
    const { url, arrivals } = await cutsReusedConnections(() => JSON.stringify({ memory: [] }));
    const remote = client(url, { retries: 3, retryDelay: 10 });
    expect(await remote.stateDict(1)).toEqual({ memory: [] });
    expect(await remote.stateDict(2)).toEqual({ memory: [] });
    expect(arrivals.filter((line) => line.startsWith('GET /memory/2'))).toHaveLength(2);
  });

  it('a 503 (the server did not start on it) is sent again, for a POST too', async () => {
    const arrivals: string[] = [];
    const url = await hostile((request, response) => {
      request.resume();
      arrivals.push(request.url ?? '');
      if (arrivals.length === 1) {
        response.writeHead(503, { 'content-type': 'application/json', connection: 'close' });
        response.end(JSON.stringify({ detail: 'closing', error: 'ServiceUnavailable' }));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(message('ok'));
    });
    expect((await client(url, { retryDelay: 10 }).call('hi')).content).toBe('ok');
    expect(arrivals).toEqual(['/chat_completion', '/chat_completion']);
  });

  it('a connection idle for 4 s is not reused (servers commonly close theirs at 5 s)', async () => {
    const server = http.createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(message('ok'));
    });
    // No Keep-Alive header (as uvicorn): the client cannot learn the server's timeout.
    server.keepAliveTimeout = 0;
    let connections = 0;
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    started.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const address = server.address();
    const remote = client(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
    expect((await remote.call('one')).content).toBe('ok');
    expect((await remote.call('two')).content).toBe('ok');
    expect(connections).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 4_300));
    expect((await remote.call('three')).content).toBe('ok');
    expect(connections).toBe(2);
    remote.close();
    server.closeAllConnections();
  }, 10_000);
});
