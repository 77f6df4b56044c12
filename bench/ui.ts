import { performance } from 'node:perf_hooks';
import { AsyncStreamingAgent } from '../src/agents/async-streaming-agent';
import { AsyncMockLLM } from '../src/testing/mock-llm';
import { EventRelay } from '../src/ui/event-relay';
import type { Suite } from './report';

/**
 * What `lagent ui` adds to a streamed reply: the same streaming agent with and without the UI's event relay
 * (its events serialised for the page, as the server's event stream does), each reply read to its end. A reply
 * of 507 chunks from an instant model (the worst case: nothing but the framework's own work), and of 60
 * chunks, in blocks alternated so that the machine's drift falls on both; medians of the blocks.
 */

const LONG = 'lorem ipsum dolor sit amet '.repeat(150); // 4,050 characters: 507 chunks of 8
const SHORT = 'lorem ipsum dolor sit amet '.repeat(18); // 486 characters: 61 chunks

function writer(reply: string) {
  return new AsyncStreamingAgent({
    name: 'writer',
    llm: new AsyncMockLLM({ responses: () => reply, chunkSize: 8, record: false }),
  });
}

async function block(agent: AsyncStreamingAgent, calls: number, from: number): Promise<number> {
  const started = performance.now();
  for (let i = from; i < from + calls; i++) for await (const _ of agent.call('write', { sessionId: i % 64 }));
  return ((performance.now() - started) * 1000) / calls;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function overhead(reply: string, calls: number, blocks: number) {
  const plain = writer(reply);
  const watched = writer(reply);
  const relay = new EventRelay(watched);
  let bytes = 0;
  relay.subscribe((event) => {
    bytes += JSON.stringify(event).length;
  });
  const plainTimes: number[] = [];
  const watchedTimes: number[] = [];
  await block(plain, calls, 0);
  await block(watched, calls, 0);
  for (let i = 0; i < blocks; i++) {
    if (i % 2 === 0) {
      plainTimes.push(await block(plain, calls, i * calls));
      watchedTimes.push(await block(watched, calls, i * calls));
    } else {
      watchedTimes.push(await block(watched, calls, i * calls));
      plainTimes.push(await block(plain, calls, i * calls));
    }
  }
  relay.close();
  const p = median(plainTimes);
  const w = median(watchedTimes);
  return { plain: p, watched: w, percent: (w / p - 1) * 100, bytes };
}

export const run: Suite = async (report) => {
  const long = await overhead(LONG, 20, 21);
  report({
    name: 'lagent ui: added to a streamed reply of 507 chunks (instant model)',
    value: long.percent,
    unit: '%',
    target: 5,
    note: `${(long.plain / 1000).toFixed(2)} ms without the UI's event relay, ${(long.watched / 1000).toFixed(2)} ms with it`,
  });
  const short = await overhead(SHORT, 100, 21);
  report({
    name: 'lagent ui: added to a streamed reply of 61 chunks (instant model)',
    value: short.percent,
    unit: '%',
    note: `${short.plain.toFixed(0)} µs without, ${short.watched.toFixed(0)} µs with; per call ${(short.watched - short.plain).toFixed(1)} µs`,
  });
};
