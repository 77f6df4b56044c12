import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsyncAgent } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EventRelay, EventStreams, type UIEvent, UIServer } from '#src/ui/index';

/**
 * `GET /ui/events` and clients that do not read: nothing is queued per client (a stream writes while its response
 * buffers less than a limit, the rest waits in the relay's recent events), a client that falls behind what is
 * kept is dropped with a warning, and the number of streams is capped.
 */

let assets: string;
beforeAll(() => {
  // The page itself is not needed: empty files stand in for the built one.
  assets = mkdtempSync(join(tmpdir(), 'lagent-ui-assets-'));
  for (const name of ['index.html', 'app.js', 'app.css']) writeFileSync(join(assets, name), '');
});
afterAll(() => rmSync(assets, { recursive: true, force: true }));

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const LONG = 'x'.repeat(4_000);

function chattyAgent(): AsyncAgent {
  return new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => LONG, record: false }), memory: null });
}

/** The UI servers' secret in these tests. */
const TOKEN = 'event-streams-secret';

/** Opens `GET /ui/events` on a raw socket; resolves with the socket (paused: it reads nothing more) and the status. */
function openStream(url: URL): Promise<{ socket: Socket; status: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('data', (head: Buffer) => {
      socket.pause();
      resolve({ socket, status: Number(head.toString('latin1').split(' ', 2)[1]) });
    });
    socket.once('close', () => reject(new Error('closed before answering')));
    socket.write(`GET /ui/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    cleanup.push(() => socket.destroy());
  });
}

/** Collects the process warnings with `code` while the test runs. */
function warnings(code: string): Error[] {
  const seen: Error[] = [];
  const listener = (warning: Error & { code?: string }) => {
    if (warning.code === code) seen.push(warning);
  };
  process.on('warning', listener);
  cleanup.push(() => process.off('warning', listener));
  return seen;
}

describe('lagent ui: event streams of clients that do not read', () => {
  it('drops a client that stopped reading once it falls behind the kept events, with a warning', async () => {
    const agent = chattyAgent();
    const server = new UIServer({ agent, assetsDir: assets, token: TOKEN });
    const url = new URL(await server.listen());
    cleanup.push(() => server.close());
    const dropped = warnings('LAGENT_UI_SLOW_CLIENT');
    const stalled = await openStream(url);
    expect(stalled.status).toBe(200);
    // Events of ~4 KB each until the server gives up on the client: the kernel's socket buffers fill first,
    // then 64 KiB in the server, then 500 more events (those the relay keeps) go by.
    let calls = 0;
    while (dropped.length === 0 && calls < 20_000) {
      await agent.call(LONG, { sessionId: calls % 4 });
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      calls++;
    }
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.message).toMatch(/dropped an event stream whose client stopped reading/);
    // A client that reads gets the recent events and goes on.
    const reader = await fetch(`${url.origin}/ui/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = reader.body!.getReader();
    const first = new TextDecoder().decode((await text.read()).value);
    expect(first).toMatch(/^: events of the agent tree/);
    await text.cancel();
  }, 60_000);

  it('answers 503 past 32 open event streams', async () => {
    const server = new UIServer({ agent: chattyAgent(), assetsDir: assets, token: TOKEN });
    const url = new URL(await server.listen());
    cleanup.push(() => server.close());
    const statuses: number[] = [];
    for (let i = 0; i < 33; i++) statuses.push((await openStream(url)).status);
    expect(statuses.slice(0, 32).every((status) => status === 200)).toBe(true);
    expect(statuses[32]).toBe(503);
  });
});

describe('EventStreams', () => {
  /** A node:http server whose every request is answered by `streams`; resolves to its URL and the responses. */
  async function host(streams: EventStreams): Promise<{ url: URL; responses: http.ServerResponse[] }> {
    const responses: http.ServerResponse[] = [];
    const server = http.createServer((_request, response) => {
      responses.push(response);
      streams.open(response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const address = server.address() as { port: number };
    return { url: new URL(`http://127.0.0.1:${address.port}/`), responses };
  }

  it("a stalled client's response holds little: writes stop at its high-water mark and wait for it to drain", async () => {
    const agent = chattyAgent();
    const relay = new EventRelay(agent);
    cleanup.push(() => relay.close());
    const streams = new EventStreams(relay);
    const { url, responses } = await host(streams);
    await openStream(url);
    const response = responses[0]!;
    const dropped = warnings('LAGENT_UI_SLOW_CLIENT');
    let largest = 0;
    let most = 0;
    relay.subscribe((event) => {
      largest = Math.max(largest, JSON.stringify(event).length + 64);
    });
    let calls = 0;
    while (dropped.length === 0 && calls < 20_000) {
      await agent.call(LONG, { sessionId: calls % 4 });
      most = Math.max(most, response.writableLength);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      calls++;
    }
    expect(dropped).toHaveLength(1);
    expect(most).toBeGreaterThan(0);
    // The high-water mark (16 KiB) plus what the socket had in flight when the kernel's buffer filled (a
    // write of up to 64 KiB) and one event: the client's 12 MB and more of events are not held for it.
    expect(most).toBeLessThanOrEqual(response.writableHighWaterMark + 65_536 + largest);
    expect(streams.size).toBe(0);
  }, 60_000);

  it('a client that reads gets the recent events, then every later one, in order', async () => {
    const agent = chattyAgent();
    const relay = new EventRelay(agent);
    cleanup.push(() => relay.close());
    await agent.call('before', { sessionId: 1 });
    const streams = new EventStreams(relay);
    const { url } = await host(streams);
    const controller = new AbortController();
    cleanup.push(() => controller.abort());
    const response = await fetch(url, { signal: controller.signal });
    for (let i = 0; i < 50; i++) await agent.call(LONG, { sessionId: 2 });
    const wanted = relay.sent;
    const events: UIEvent[] = [];
    const decoder = new TextDecoder();
    let text = '';
    const reader = response.body!.getReader();
    while (events.length < wanted) {
      const { value } = await reader.read();
      text += decoder.decode(value, { stream: true });
      const blocks = text.split('\n\n');
      text = blocks.pop()!;
      for (const block of blocks) {
        const data = block.split('\n').find((line) => line.startsWith('data: '));
        if (data !== undefined) events.push(JSON.parse(data.slice(6)) as UIEvent);
      }
    }
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: wanted }, (_, i) => i + 1));
    expect(events[0]!.kind).toBe('callStart');
  });
});
