import {
  type Contender,
  type ContenderKind,
  FRAMEWORKS,
  type Framework,
  isFramework,
  loadContender,
  REPLY,
} from './contenders';
import {
  type ConcurrentResult,
  median,
  type PerCallResult,
  type QueueResult,
  RESULT_PREFIX,
  SCENARIOS,
} from './processes';
import { isToolFramework, loadToolContender, type ToolFramework } from './tool-contenders';

/**
 * One benchmark scenario for one framework, run as its own process so that the framework measured is
 * the only one ever loaded in it:
 *
 *   node --expose-gc --import tsx bench/competitors/runner.ts <framework> <scenario>
 *
 * Prints one line, `RESULT_PREFIX` followed by the scenario's figures as JSON, to stdout.
 * `bench/core.ts` starts these processes one after the other (`processes.ts`) and reports the medians.
 */

/** Calls per round in the per-call scenario: a few ms per round for every framework. */
const PER_CALL_BATCH: Record<Framework, number> = {
  model: 1_000,
  lagent: 1_000,
  ai: 100,
  agents: 50,
  langgraph: 5,
};
/**
 * Warm-up by time, the same for every framework: the competitors take a few thousand calls to reach
 * their pace (JIT, heap sizing), lagent-ts a few hundred.
 */
const PER_CALL_WARM_UP_MS = 1_500;
/** Calls per round in the tool-turn scenario (two model turns and a tool run each): a few ms per round. */
const TOOL_TURN_BATCH: Record<ToolFramework, number> = { lagent: 500, ai: 50, agents: 25, langgraph: 2 };
const PER_CALL_ROUNDS = 60;
/** Every framework drops its kept sessions after this many calls, so memory use stays flat alike. */
const PER_CALL_RESET = 10_000;

async function perCall(kind: ContenderKind, calls: number): Promise<PerCallResult> {
  const contender = kind.create(0);
  const rounds: number[] = [];
  let session = 0;
  const warmUpEnd = performance.now() + PER_CALL_WARM_UP_MS;
  let warmUpRounds = 0;
  while (rounds.length < PER_CALL_ROUNDS) {
    if (session >= PER_CALL_RESET) {
      contender.reset();
      session = 0;
    }
    const started = performance.now();
    for (let i = 0; i < calls; i++) await contender.call(++session, 'hi');
    const ended = performance.now();
    if (warmUpRounds < 10 || started < warmUpEnd) warmUpRounds++;
    else rounds.push(((ended - started) * 1000) / calls);
  }
  return { calls, warmUpRounds, rounds, median: median(rounds) };
}

const SESSIONS = 10_000;
/**
 * Warm-up by time here too, the same for every framework: at least 2 rounds and 2 s, so each is measured
 * at its steady pace (JIT done, heap sized) rather than while still compiling.
 */
const CONCURRENT_WARM_UP_ROUNDS = 2;
const CONCURRENT_WARM_UP_MS = 2_000;
const CONCURRENT_ROUNDS = 5;

async function concurrent(kind: ContenderKind): Promise<ConcurrentResult> {
  const walls: number[] = [];
  const heaps: number[] = [];
  const warmUpEnd = performance.now() + CONCURRENT_WARM_UP_MS;
  for (let round = 0; walls.length < CONCURRENT_ROUNDS; round++) {
    const { wall, heapGrowth } = await concurrentRound(kind);
    if (round < CONCURRENT_WARM_UP_ROUNDS || performance.now() < warmUpEnd) continue;
    walls.push(wall);
    heaps.push(heapGrowth);
  }
  return { walls, heaps, wall: median(walls), heap: median(heaps) };
}

/** One round in its own frame, so nothing of it is reachable when the next round measures its baseline. */
async function concurrentRound(kind: ContenderKind): Promise<{ wall: number; heapGrowth: number }> {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const contender: Contender = kind.create(50);
  const wallStart = performance.now();
  await Promise.all(Array.from({ length: SESSIONS }, (_, i) => contender.call(i, `question ${i}`)));
  const wall = (performance.now() - wallStart) / 1000;
  globalThis.gc?.();
  const heapGrowth = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  if (contender.sessions() !== SESSIONS) throw new Error(`${kind.name}: concurrent sessions were lost`);
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
const QUEUE_WARM_UP = 4;
const QUEUE_ROUNDS = 15;

async function queue(): Promise<QueueResult> {
  const { AsyncAgent } = await import('../../src/index');
  const { AsyncMockLLM } = await import('../../src/testing/index');
  const depths = [100, 1_000, 4_000];
  const queued = depths.map(() => [] as number[]);
  const spread = depths.map(() => [] as number[]);
  let inOrder = true;
  for (let round = 0; round < QUEUE_WARM_UP + QUEUE_ROUNDS; round++) {
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
        if (round < QUEUE_WARM_UP) continue;
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
  return {
    depths,
    queued: queued.map(median),
    spread: spread.map(median),
    rounds: QUEUE_ROUNDS,
    inOrder,
  };
}

/** One tool turn before measuring: it must come back with the scripted answer and keep one session. */
async function checkToolTurn(kind: ContenderKind): Promise<void> {
  const contender = kind.create(0);
  const text = await contender.call(1, 'hi');
  if (text !== REPLY || contender.sessions() !== 1) {
    throw new Error(`${kind.name}: the tool turn answered ${JSON.stringify(text)}`);
  }
}

async function main(): Promise<void> {
  const [framework, scenario] = process.argv.slice(2);
  if (!isFramework(framework) || !(SCENARIOS as readonly (string | undefined)[]).includes(scenario)) {
    throw new Error(`usage: runner.ts <${FRAMEWORKS.join('|')}> <${SCENARIOS.join('|')}>`);
  }
  let result: PerCallResult | ConcurrentResult | QueueResult;
  if (scenario === 'tool-turn') {
    if (!isToolFramework(framework)) throw new Error(`the tool-turn scenario has no ${framework} contender`);
    const kind = await loadToolContender(framework);
    await checkToolTurn(kind);
    result = await perCall(kind, TOOL_TURN_BATCH[framework]);
  } else if (scenario === 'queue') {
    if (framework !== 'lagent') throw new Error('the queue scenario measures lagent-ts only');
    result = await queue();
  } else {
    const kind = await loadContender(framework);
    result =
      scenario === 'per-call' ? await perCall(kind, PER_CALL_BATCH[framework]) : await concurrent(kind);
  }
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

await main();
