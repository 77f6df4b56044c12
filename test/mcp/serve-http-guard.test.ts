// serveMCP over HTTP against hostile clients: refused requests keep nothing, sessions expire and are capped,
// web pages of other sites and clients without the token are refused.
import http from 'node:http';
import { connect } from 'node:net';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { asyncTool, tool } from 'lagent-ts';
import { type MCPServerHandle, MCPToolkit, serveMCP } from 'lagent-ts/mcp';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../helpers/processes';

const echo = tool({
  name: 'echo',
  description: 'Echo',
  parameters: z.object({ text: z.string() }),
  run: ({ text }) => text,
});

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });
}

/** POSTs `body` from the local address `from` (another loopback address is another client); resolves to the status. */
function postFrom(from: string, url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST',
      localAddress: from,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    request.once('response', (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    });
    request.once('error', reject);
    request.end(body);
  });
}

/** A full garbage collection, for heap figures. */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('serveMCP over HTTP, guarded', () => {
  let server: MCPServerHandle | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('builds nothing for refused requests: 2,000 of them keep no session and no memory', async () => {
    server = await serveMCP({ actions: [echo], transport: 'http' });
    const url = server.url!;
    const refused: [string, Record<string, string>][] = [
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), {}], // not an initialize
      ['{ not json', {}],
      [INITIALIZE, { accept: 'text/plain' }], // refused by the SDK's transport, once built
    ];
    const send = async (i: number) => {
      const [body, headers] = refused[i % refused.length]!;
      const response = await post(url, body, headers);
      await response.arrayBuffer();
      expect(response.status).toBeGreaterThanOrEqual(400);
    };
    for (let i = 0; i < 300; i++) await send(i); // warm up
    collect();
    const before = getHeapStatistics().used_heap_size;
    for (let round = 0; round < 20; round++)
      await Promise.all(Array.from({ length: 100 }, (_, i) => send(i)));
    collect();
    const grown = getHeapStatistics().used_heap_size - before;
    // Each kept server and transport costs ~25 KB: 2,000 of them are ~50 MB.
    expect(grown).toBeLessThan(15 * 1024 * 1024);
    expect(server.sessionCount).toBe(0);
    // A real client still gets its session.
    const kit = await MCPToolkit.connect({ url });
    expect((await kit.call({ text: 'hi' }, 'echo')).toText()).toBe('hi');
    expect(server.sessionCount).toBe(1);
    await kit.close();
    await waitFor(() => server!.sessionCount === 0);
  });

  it('ends sessions idle for sessionIdleMs, even with their notification stream open; the toolkit starts a new one', async () => {
    server = await serveMCP({ actions: [echo], transport: 'http', sessionIdleMs: 200 });
    const response = await post(server.url!, INITIALIZE);
    await response.arrayBuffer();
    const id = response.headers.get('mcp-session-id');
    expect(id).toBeTruthy();
    const kit = await MCPToolkit.connect({ url: server.url! });
    try {
      // The toolkit keeps its notification stream (GET) open: that does not keep its session.
      await waitFor(() => server!.sessionCount === 0, 5_000);
      const gone = await post(server.url!, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), {
        'mcp-session-id': id!,
        'mcp-protocol-version': '2025-06-18',
      });
      expect(gone.status).toBe(404);
      // Its next call is answered 404 too: it initializes again and sends the call once more.
      expect((await kit.call({ text: 'still here' }, 'echo')).toText()).toBe('still here');
      expect(server.sessionCount).toBe(1);
    } finally {
      await kit.close();
    }
  });

  it('one client cannot fill the server: past maxSessionsPerClient its least recently used idle session ends', async () => {
    server = await serveMCP({
      actions: [echo],
      transport: 'http',
      maxSessions: 30,
      maxSessionsPerClient: 10,
    });
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const response = await post(server.url!, INITIALIZE);
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      ids.push(response.headers.get('mcp-session-id')!);
    }
    expect(server.sessionCount).toBe(10);
    // The ten most recent are the ones alive.
    const status = async (sessionId: string) => {
      const response = await post(server!.url!, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }), {
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18',
      });
      await response.arrayBuffer();
      return response.status;
    };
    expect(await status(ids[39]!)).toBe(404);
    expect(await status(ids[40]!)).toBe(200);
    // Another client (another address) still gets a session.
    const other = await postFrom('127.0.0.2', server.url!, INITIALIZE);
    expect(other).toBe(200);
    expect(server.sessionCount).toBe(11);
  });

  it('answers 429 when every session of the client has a request under way', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let running = 0;
    const wait = asyncTool({
      name: 'wait',
      description: 'Waits',
      parameters: z.object({}),
      run: async () => {
        running++;
        await held;
        return 'done';
      },
    });
    server = await serveMCP({ actions: [wait], transport: 'http', maxSessionsPerClient: 2 });
    const kits = await Promise.all([0, 1].map(() => MCPToolkit.connect({ url: server!.url! })));
    try {
      const calls = kits.map((kit) => kit.call({}, 'wait'));
      // Both calls are under way on the server before the third initialization.
      await waitFor(() => running === 2);
      const third = await post(server.url!, INITIALIZE);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('60');
      release();
      expect((await Promise.all(calls)).map((result) => result.toText())).toEqual(['done', 'done']);
    } finally {
      release();
      await Promise.all(kits.map((kit) => kit.close()));
    }
  });

  it('cuts off a client that trickles its headers after headersTimeout', async () => {
    server = await serveMCP({ actions: [echo], transport: 'http', headersTimeout: 300, requestTimeout: 600 });
    const { port } = new URL(server.url!);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    let answer = '';
    socket.on('data', (part: Buffer) => {
      answer += part.toString('latin1');
    });
    socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    // One more header line every 100 ms: never the blank line that ends them.
    const trickle = setInterval(() => socket.write('X-Slow: 1\r\n'), 100);
    try {
      await new Promise((resolve) => socket.once('close', resolve));
    } finally {
      clearInterval(trickle);
    }
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  }, 10_000);

  it('refuses bad limits', async () => {
    await expect(serveMCP({ actions: [echo], transport: 'http', maxSessionsPerClient: 0 })).rejects.toThrow(
      /maxSessionsPerClient/,
    );
    await expect(
      serveMCP({ actions: [echo], transport: 'http', headersTimeout: 5_000, requestTimeout: 1_000 }),
    ).rejects.toThrow(/headersTimeout/);
  });

  it('answers 503 past maxSessions', async () => {
    server = await serveMCP({ actions: [echo], transport: 'http', maxSessions: 2, maxSessionsPerClient: 5 });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await post(server.url!, INITIALIZE);
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 503]);
    expect(server.sessionCount).toBe(2);
  });

  it('refuses web pages of other sites unless allowed, and plain-text bodies', async () => {
    server = await serveMCP({ actions: [echo], transport: 'http' });
    const evil = await post(server.url!, INITIALIZE, { origin: 'http://evil.example' });
    expect(evil.status).toBe(403);
    expect(await evil.text()).toContain('allowedOrigins');
    const simple = await post(server.url!, INITIALIZE, { 'content-type': 'text/plain' });
    expect(simple.status).toBe(415);
    expect(server.sessionCount).toBe(0);
    await server.close();

    server = await serveMCP({ actions: [echo], transport: 'http', allowedOrigins: ['http://app.example'] });
    const allowed = await post(server.url!, INITIALIZE, { origin: 'http://app.example' });
    await allowed.arrayBuffer();
    expect(allowed.status).toBe(200);
    expect((await post(server.url!, INITIALIZE, { origin: 'http://evil.example' })).status).toBe(403);
  });

  it('needs the bearer token when one is set', async () => {
    server = await serveMCP({ actions: [echo], transport: 'http', token: 's3cret' });
    const none = await post(server.url!, INITIALIZE);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(server.url!, INITIALIZE, { authorization: 'Bearer s3cre' })).status).toBe(401);
    await expect(MCPToolkit.connect({ url: server.url!, connectTimeoutMs: 5000 })).rejects.toThrow();
    const kit = await MCPToolkit.connect({ url: server.url!, headers: { authorization: 'Bearer s3cret' } });
    expect((await kit.call({ text: 'ok' }, 'echo')).toText()).toBe('ok');
    await kit.close();
    await expect(serveMCP({ actions: [echo], transport: 'http', token: '' })).rejects.toThrow(/token/);
  });
});
