import { DIRECT_RUN } from '../src/agents/lifecycle/direct-call';
import { AsyncAgent } from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
import { median } from './competitors/processes';
import type { Suite } from './report';

/**
 * What `AsyncAgent.call`'s direct run (the built-in forward's steps run without a generator and its driver)
 * saves against a model that takes 1 ms, the fastest a real model answers: the same calls with the direct
 * run on and off, in alternating rounds of one process, medians over the rounds. Decides whether the
 * direct run is worth its code (PERFORMANCE.md).
 */
const ROUNDS = 7;
const SEQUENTIAL = 1_000;
const CONCURRENT = 10_000;

function agentOn1msModel(): AsyncAgent {
  return new AsyncAgent({
    llm: new AsyncMockLLM({ responses: () => 'ok', record: false, latencyMs: 1 }),
    template: 'You are terse.',
  });
}

/** Wall time of `SEQUENTIAL` calls one after another, each on a new session, in ms. */
async function sequential(): Promise<number> {
  const agent = agentOn1msModel();
  const started = performance.now();
  for (let i = 0; i < SEQUENTIAL; i++) await agent.call('hi', { sessionId: i });
  return performance.now() - started;
}

/** Wall time (ms) and heap growth (MB) of `CONCURRENT` calls at once, each on its own session. */
async function concurrent(): Promise<{ wall: number; heap: number }> {
  globalThis.gc?.();
  const before = process.memoryUsage().heapUsed;
  const agent = agentOn1msModel();
  const started = performance.now();
  const calls: Promise<unknown>[] = new Array(CONCURRENT);
  for (let i = 0; i < CONCURRENT; i++) calls[i] = agent.call('hi', { sessionId: i });
  await Promise.all(calls);
  const wall = performance.now() - started;
  globalThis.gc?.();
  const heap = (process.memoryUsage().heapUsed - before) / 2 ** 20;
  if (agent.memory!.sessions().length !== CONCURRENT) throw new Error('sessions were lost');
  return { wall, heap };
}

async function measure<T>(direct: boolean, run: () => Promise<T>): Promise<T> {
  DIRECT_RUN.enabled = direct;
  try {
    return await run();
  } finally {
    DIRECT_RUN.enabled = true;
  }
}

export const run: Suite = async (report) => {
  // Warm-up: both ways, so neither is measured unoptimised.
  for (let i = 0; i < 2; i++) {
    await measure(true, sequential);
    await measure(false, sequential);
    await measure(true, concurrent);
    await measure(false, concurrent);
  }
  const seq = { on: [] as number[], off: [] as number[] };
  const conc = { on: [] as number[], off: [] as number[], heapOn: [] as number[], heapOff: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    seq.on.push(await measure(true, sequential));
    seq.off.push(await measure(false, sequential));
    const on = await measure(true, concurrent);
    const off = await measure(false, concurrent);
    conc.on.push(on.wall);
    conc.off.push(off.wall);
    conc.heapOn.push(on.heap);
    conc.heapOff.push(off.heap);
  }
  const seqOn = median(seq.on);
  const seqOff = median(seq.off);
  report({
    name: 'direct run, 1 ms model, 1,000 sequential calls: wall time with / without',
    value: seqOn / seqOff,
    unit: 'x',
    note: `${((seqOn * 1000) / SEQUENTIAL).toFixed(1)} µs per call with, ${((seqOff * 1000) / SEQUENTIAL).toFixed(1)} µs without; median of ${ROUNDS} alternating rounds`,
  });
  const concOn = median(conc.on);
  const concOff = median(conc.off);
  report({
    name: 'direct run, 1 ms model, 10,000 concurrent sessions: wall time with / without',
    value: concOn / concOff,
    unit: 'x',
    note: `${concOn.toFixed(1)} ms with, ${concOff.toFixed(1)} ms without; heap growth ${median(conc.heapOn).toFixed(1)} MB with, ${median(conc.heapOff).toFixed(1)} MB without (sessions kept); median of ${ROUNDS} alternating rounds`,
  });
};
