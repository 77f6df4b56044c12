import { Bench } from 'tinybench';
import { Agent, AsyncAgent } from '../src/index';
import { AsyncMockLLM, MockLLM } from '../src/testing/index';
import type { Suite } from './report';

const BATCH = 200;

/** Mean time of one call in µs, measured in batches so timer resolution does not dominate. */
function perCall(bench: Bench, name: string): number {
  const task = bench.getTask(name);
  const result = task?.result as { latency?: { mean: number } } | undefined;
  if (!result?.latency) throw new Error(`benchmark ${name} did not complete`);
  return (result.latency.mean * 1000) / BATCH;
}

export const run: Suite = async (report) => {
  const reply = () => 'ok';
  const syncAgent = new Agent({
    llm: new MockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
  });
  const asyncAgent = new AsyncAgent({
    llm: new AsyncMockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
  });
  let session = 0;
  // A fresh session per call; sessions are dropped now and then so memory use stays flat.
  const nextSession = (agent: Agent | AsyncAgent) => {
    if (++session % 50_000 === 0) for (const id of agent.memory!.sessions()) agent.memory!.reset(id);
    return session;
  };

  const bench = new Bench({ time: 1_500, warmupTime: 300 });
  bench
    .add('Agent.call', () => {
      for (let i = 0; i < BATCH; i++) syncAgent.call('hi', { sessionId: nextSession(syncAgent) });
    })
    .add('AsyncAgent.call', async () => {
      for (let i = 0; i < BATCH; i++) await asyncAgent.call('hi', { sessionId: nextSession(asyncAgent) });
    });
  await bench.run();
  report({
    name: 'Agent.call, single turn, new session each call',
    value: perCall(bench, 'Agent.call'),
    unit: 'µs',
    target: 3,
  });
  report({
    name: 'AsyncAgent.call, single turn, new session each call',
    value: perCall(bench, 'AsyncAgent.call'),
    unit: 'µs',
    target: 5,
  });

  // A 1,000-turn conversation in one session: aggregation grows with the history.
  const talker = new Agent({
    llm: new MockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
  });
  for (let i = 0; i < 50; i++) talker.call('warm up', { sessionId: 'warm' });
  const started = performance.now();
  for (let turn = 0; turn < 1_000; turn++) talker.call(`turn ${turn}`, { sessionId: 'long' });
  const conversation = performance.now() - started;
  report({
    name: '1,000-turn conversation (one session, whole history aggregated each turn)',
    value: conversation,
    unit: 'ms',
    note: `${((conversation * 1000) / 1000).toFixed(1)} µs per turn`,
  });

  // 10,000 concurrent sessions against a model that takes 50 ms: two warm-up rounds (JIT, heap sizing),
  // then the median of three measured rounds, each on a fresh agent.
  const walls: number[] = [];
  const heaps: number[] = [];
  for (let round = 0; round < 5; round++) {
    const { wall, heapGrowth } = await concurrentRound(reply);
    if (round >= 2) {
      walls.push(wall);
      heaps.push(heapGrowth);
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  report({
    name: '10,000 concurrent AsyncAgent sessions, 50 ms model: wall time',
    value: median(walls),
    unit: 's',
    target: 0.15,
    note: `latency-bound floor 0.05 s; rounds ${walls.map((wall) => wall.toFixed(3)).join(', ')}`,
  });
  report({
    name: '10,000 concurrent AsyncAgent sessions: heap growth (all sessions kept)',
    value: median(heaps),
    unit: 'MB',
    target: 40,
  });
};

/** One round in its own frame, so nothing of it is reachable when the next round measures its baseline. */
async function concurrentRound(reply: () => string): Promise<{ wall: number; heapGrowth: number }> {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: reply, latencyMs: 50, record: false }) });
  const wallStart = performance.now();
  await Promise.all(Array.from({ length: 10_000 }, (_, i) => agent.call(`question ${i}`, { sessionId: i })));
  const wall = (performance.now() - wallStart) / 1000;
  globalThis.gc?.();
  const heapGrowth = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  if (agent.memory!.size !== 10_000) throw new Error('concurrent sessions were lost');
  return { wall, heapGrowth };
}
