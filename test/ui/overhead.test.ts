import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AsyncStreamingAgent } from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventRelay, UIServer } from '#src/ui/index';

/**
 * The UI beside a streamed reply: the same agent served by a plain HTTPAgentServer and by a UIServer whose event
 * stream a page is reading, each reply read to its end through `/chat_completion/stream`. The tests check what
 * arrives (every reply whole, every call's events on the page); the time the UI adds is printed here and measured
 * by `npm run bench ui` (a timing threshold here would fail on a busy machine, not on a slower UI).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REPLY = 'lorem ipsum dolor sit amet '.repeat(150); // 4,050 characters: 507 chunks of 8

function agent(latencyMs: number) {
  return new AsyncStreamingAgent({
    name: 'writer',
    llm: new AsyncMockLLM({ responses: () => REPLY, latencyMs, record: false }),
  });
}

/** Milliseconds to read one streamed reply to its end. */
async function streamOnce(url: string, session: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${url}/chat_completion/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH },
    body: JSON.stringify({ message: ['write'], session_id: session }),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  if (!text.includes('event: message')) throw new Error(`no final message: ${text.slice(0, 200)}`);
  return ms;
}

/** Both servers need it: the UI always has a secret. */
const TOKEN = 'overhead-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Medians of `trials` alternated runs on each server, after a warm-up; each run on a new session. */
async function compare(plainUrl: string, uiUrl: string, trials: number) {
  const plain: number[] = [];
  const ui: number[] = [];
  for (let i = 0; i < 5; i++) {
    await streamOnce(plainUrl, `warm-${i}`);
    await streamOnce(uiUrl, `warm-${i}`);
  }
  for (let i = 0; i < trials; i++) {
    // Alternate which goes first, so a drift of the machine's load falls on both.
    if (i % 2 === 0) {
      plain.push(await streamOnce(plainUrl, `s-${i}`));
      ui.push(await streamOnce(uiUrl, `s-${i}`));
    } else {
      ui.push(await streamOnce(uiUrl, `s-${i}`));
      plain.push(await streamOnce(plainUrl, `s-${i}`));
    }
  }
  return { plain: median(plain), ui: median(ui), overhead: median(ui) / median(plain) - 1 };
}

describe('lagent ui: overhead on a streamed reply', () => {
  const servers: { close(): Promise<void> }[] = [];
  const readers: AbortController[] = [];
  let received = 0;

  beforeAll(() => {
    if (!existsSync(`${ROOT}dist/ui/app.js`)) {
      execFileSync(process.execPath, [`${ROOT}scripts/build-ui.mjs`], { cwd: ROOT, stdio: 'pipe' });
    }
  });

  afterAll(async () => {
    for (const reader of readers) reader.abort();
    await Promise.all(servers.map((server) => server.close()));
  });

  async function start(latencyMs: number) {
    const plain = new HTTPAgentServer({ agent: agent(latencyMs), port: 0, token: TOKEN });
    const ui = new UIServer({ agent: agent(latencyMs), token: TOKEN });
    servers.push(plain, ui);
    const [plainUrl, uiUrl] = await Promise.all([plain.listen(), ui.listen()]);
    // A page watching: its event stream read as the events come.
    const controller = new AbortController();
    readers.push(controller);
    const events = await fetch(`${uiUrl}/ui/events`, { signal: controller.signal, headers: AUTH });
    void (async () => {
      const reader = events.body!.getReader();
      const decoder = new TextDecoder();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          received += decoder.decode(value).split('event: agent').length - 1;
        }
      } catch {
        // aborted at the end
      }
    })();
    return { plainUrl, uiUrl };
  }

  it('a reply of 507 chunks from an instant model: the UI (events read by a page) adds little', async () => {
    const { plainUrl, uiUrl } = await start(0);
    const before = received;
    const result = await compare(plainUrl, uiUrl, 30);
    console.info(
      `lagent ui overhead, instant model, 507 chunks: plain ${result.plain.toFixed(2)} ms, ui ${result.ui.toFixed(2)} ms, overhead ${(result.overhead * 100).toFixed(1)}%`,
    );
    // The page got the events of every call: callStart, llmStart, llmEnd, callEnd each.
    expect(received - before).toBeGreaterThanOrEqual(4 * 35);
  }, 60_000);

  it('the same reply from a model with 50 ms latency', async () => {
    const { plainUrl, uiUrl } = await start(50);
    const before = received;
    const result = await compare(plainUrl, uiUrl, 10);
    expect(received - before).toBeGreaterThanOrEqual(4 * 15);
    console.info(
      `lagent ui overhead, 50 ms model, 507 chunks: plain ${result.plain.toFixed(2)} ms, ui ${result.ui.toFixed(2)} ms, overhead ${(result.overhead * 100).toFixed(1)}%`,
    );
  }, 60_000);

  it('in process, without HTTP: what the event relay adds to each call', async () => {
    // A two-chunk reply, so the per-call cost of the events is not hidden behind the chunks.
    const make = () =>
      new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: () => 'short reply', record: false }) });
    const plainAgent = make();
    const watchedAgent = make();
    const relay = new EventRelay(watchedAgent);
    let sent = 0;
    relay.subscribe((event) => {
      sent += JSON.stringify(event).length;
    });
    const block = async (writer: AsyncStreamingAgent, from: number) => {
      const started = performance.now();
      for (let i = from; i < from + 100; i++) for await (const _ of writer.call('write', { sessionId: i }));
      return (performance.now() - started) / 100;
    };
    await block(plainAgent, 0);
    await block(watchedAgent, 0);
    const plain: number[] = [];
    const watched: number[] = [];
    for (let round = 1; round <= 15; round++) {
      plain.push(await block(plainAgent, round * 100));
      watched.push(await block(watchedAgent, round * 100));
    }
    relay.close();
    expect(sent).toBeGreaterThan(0);
    const added = (median(watched) - median(plain)) * 1000;
    console.info(
      `lagent ui event relay, in process: ${(median(plain) * 1000).toFixed(1)} µs per call plain, ${(median(watched) * 1000).toFixed(1)} µs watched: ${added.toFixed(1)} µs added per call`,
    );
  }, 30_000);
});
