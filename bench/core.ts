import { Bench } from 'tinybench';
import { Agent, AsyncAgent } from '../src/index';
import { AsyncMockLLM, MockLLM } from '../src/testing/index';
import { aiSdk, type ContenderKind, lagent, openaiAgents } from './competitors/contenders';
import type { Report, Suite } from './report';

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

  await sideBySidePerCall(report);
  await sideBySideConcurrent(report);
  await oneSessionQueue(report);
};

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

const AI_SDK_NOTE = 'AI SDK: generateText, messages array built per call, scripted v4 model';
const AGENTS_NOTE = 'Agents JS: Runner.run(agent, input), tracing off, scripted Model';

/**
 * Per-call time of lagent-ts, the AI SDK and OpenAI Agents JS, each a new session per call against a 0 ms
 * scripted model. Rounds interleave the three so that machine noise hits them alike; each figure is the
 * median over rounds, each ratio the median of the per-round ratios.
 */
async function sideBySidePerCall(report: Report): Promise<void> {
  const kinds = [
    { kind: lagent, calls: 1_000 },
    { kind: aiSdk, calls: 100 },
    { kind: openaiAgents, calls: 50 },
  ];
  const contenders = kinds.map(({ kind, calls }) => ({
    kind,
    calls,
    contender: kind.create(0),
    times: [] as number[],
  }));
  let session = 0;
  for (let round = 0; round < 70; round++) {
    for (const entry of contenders) {
      const { contender, calls } = entry;
      if (session > 50_000) {
        // Sessions are dropped now and then, for all three alike, so memory use stays flat.
        for (const other of contenders) other.contender.reset();
        session = 0;
      }
      const started = performance.now();
      for (let i = 0; i < calls; i++) await contender.call(++session, 'hi');
      // The first 10 rounds warm up.
      if (round >= 10) entry.times.push(((performance.now() - started) * 1000) / calls);
    }
  }
  const [mine, ai, agents] = contenders as [
    (typeof contenders)[0],
    (typeof contenders)[0],
    (typeof contenders)[0],
  ];
  const ratios = (other: typeof mine) => median(other.times.map((time, i) => time / mine.times[i]!));
  report({
    name: 'side by side: AsyncAgent.call, new session each call',
    value: median(mine.times),
    unit: 'µs',
    note: `median of ${mine.times.length} rounds of ${mine.calls}, interleaved with the two below`,
  });
  report({
    name: 'side by side: AI SDK generateText, one turn',
    value: median(ai.times),
    unit: 'µs',
    note: AI_SDK_NOTE,
  });
  report({
    name: 'side by side: OpenAI Agents JS run, one turn',
    value: median(agents.times),
    unit: 'µs',
    note: AGENTS_NOTE,
  });
  report({
    name: 'AsyncAgent.call speed-up over AI SDK generateText',
    value: ratios(ai),
    unit: 'x',
    target: 30,
    atLeast: true,
    note: 'median of per-round ratios',
  });
  report({
    name: 'AsyncAgent.call speed-up over OpenAI Agents JS run',
    value: ratios(agents),
    unit: 'x',
    note: 'median of per-round ratios',
  });
}

/**
 * 10,000 concurrent sessions against a model that takes 50 ms, through each framework: warm-up rounds
 * (JIT, heap sizing; two for lagent-ts, one for the others, whose rounds take seconds), then the median
 * of three measured rounds, each on fresh state; the three frameworks take turns within every round.
 */
async function sideBySideConcurrent(report: Report): Promise<void> {
  const kinds = [lagent, aiSdk, openaiAgents];
  const walls = kinds.map(() => [] as number[]);
  const heaps = kinds.map(() => [] as number[]);
  for (let round = 0; round < 5; round++) {
    for (const [k, kind] of kinds.entries()) {
      if (round === 0 && kind !== lagent) continue; // the others warm up in one round: each takes seconds
      const { wall, heapGrowth } = await concurrentRound(kind);
      if (round >= 2) {
        walls[k]!.push(wall);
        heaps[k]!.push(heapGrowth);
      }
    }
  }
  const [mineWall, aiWall, agentsWall] = walls.map(median) as [number, number, number];
  const [mineHeap, aiHeap, agentsHeap] = heaps.map(median) as [number, number, number];
  report({
    name: '10,000 concurrent AsyncAgent sessions, 50 ms model: wall time',
    value: mineWall,
    unit: 's',
    target: 0.1,
    note: `latency-bound floor 0.05 s; rounds ${walls[0]!.map((wall) => wall.toFixed(3)).join(', ')}; AI SDK ${aiWall.toFixed(3)} s, Agents JS ${agentsWall.toFixed(3)} s`,
  });
  report({
    name: '10,000 concurrent sessions, 50 ms model: AI SDK generateText wall time',
    value: aiWall,
    unit: 's',
    note: `${(aiWall / mineWall).toFixed(1)}x lagent-ts`,
  });
  report({
    name: '10,000 concurrent sessions, 50 ms model: OpenAI Agents JS run wall time',
    value: agentsWall,
    unit: 's',
    note: `${(agentsWall / mineWall).toFixed(1)}x lagent-ts`,
  });
  report({
    name: '10,000 concurrent AsyncAgent sessions: heap growth (all sessions kept)',
    value: mineHeap,
    unit: 'MB',
    target: 25,
    note: `AI SDK ${aiHeap.toFixed(2)} MB, Agents JS ${agentsHeap.toFixed(2)} MB`,
  });
  report({
    name: '10,000 concurrent sessions: AI SDK heap growth (histories kept)',
    value: aiHeap,
    unit: 'MB',
  });
  report({
    name: '10,000 concurrent sessions: OpenAI Agents JS heap growth (histories kept)',
    value: agentsHeap,
    unit: 'MB',
  });
}

/** One round in its own frame, so nothing of it is reachable when the next round measures its baseline. */
async function concurrentRound(kind: ContenderKind): Promise<{ wall: number; heapGrowth: number }> {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const contender = kind.create(50);
  const wallStart = performance.now();
  await Promise.all(Array.from({ length: 10_000 }, (_, i) => contender.call(i, `question ${i}`)));
  const wall = (performance.now() - wallStart) / 1000;
  globalThis.gc?.();
  const heapGrowth = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  if (contender.sessions() !== 10_000) throw new Error(`${kind.name}: concurrent sessions were lost`);
  return { wall, heapGrowth };
}

/**
 * N calls issued at once on ONE session of an `AsyncAgent` with a 0 ms model: the per-call time must not
 * grow with the queue (N = 100, 1,000, 4,000). The session keeps every turn, but the prompt is built from
 * its last 2 messages (`recentN`), so the aggregation cost does not grow with the history and only the
 * queueing shows. For reference, the same N calls spread over N sessions (nothing queues): what grows
 * there comes from N calls being in flight at once (garbage collection), not from the queue. Every sample
 * makes the same 4,000 calls (4,000 / N batches of N, one after the other), so each pays its share of
 * garbage collection. Depths and both layouts are interleaved, each round on a fresh agent after a full
 * collection; figures are medians.
 */
const QUEUE_CALLS = 4_000;
async function oneSessionQueue(report: Report): Promise<void> {
  const depths = [100, 1_000, 4_000];
  const queued = depths.map(() => [] as number[]);
  const spread = depths.map(() => [] as number[]);
  let inOrder = true;
  for (let round = 0; round < 17; round++) {
    for (const [d, depth] of depths.entries()) {
      for (const oneSession of [true, false]) {
        globalThis.gc?.();
        const agent = new AsyncAgent({
          llm: new AsyncMockLLM({ responses: () => 'ok', record: false }),
          template: 'You are terse.',
          memory: { recentN: 2 },
        });
        const started = performance.now();
        for (let batch = 0; batch < QUEUE_CALLS / depth; batch++) {
          await Promise.all(
            Array.from({ length: depth }, (_, i) =>
              agent.call(`q ${i}`, { sessionId: oneSession ? 'one' : batch * depth + i }),
            ),
          );
        }
        const perCall = ((performance.now() - started) * 1000) / QUEUE_CALLS;
        if (round < 2) continue;
        if (oneSession) {
          const history = agent.memory!.get('one')!.getMemory({ recentN: Number.MAX_SAFE_INTEGER });
          if (history.length !== 2 * QUEUE_CALLS) throw new Error('calls on one session were lost');
          // Run one at a time in call order, the turns alternate: a user message, then its reply.
          inOrder &&= history.every((message, i) => (message.sender === 'user') === (i % 2 === 0));
        }
        (oneSession ? queued : spread)[d]!.push(perCall);
      }
    }
  }
  const perCall = queued.map(median);
  const spreadPerCall = spread.map(median);
  for (const [d, depth] of depths.entries()) {
    report({
      name: `${depth.toLocaleString('en-US')} concurrent calls on one AsyncAgent session, 0 ms model: per call`,
      value: perCall[d]!,
      unit: 'µs',
      note: `${spreadPerCall[d]!.toFixed(2)} µs spread over ${depth.toLocaleString('en-US')} sessions; median of ${queued[d]!.length} rounds`,
    });
  }
  const last = depths.length - 1;
  report({
    name: 'one-session queue: per-call time at 4,000 vs 100 queued calls',
    value: perCall[last]! / perCall[0]!,
    unit: 'x',
    target: 1.5,
    note: `${inOrder ? 'calls ran one at a time in call order' : 'calls interleaved: no per-session queue'}; spread over as many sessions: ${(spreadPerCall[last]! / spreadPerCall[0]!).toFixed(2)}x`,
  });
}
