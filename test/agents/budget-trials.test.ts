import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  type Budget,
  BudgetExceededError,
  type CallUsage,
  setModelPrice,
} from 'lagent-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AsyncCappedMockLLM } from '../helpers/capped-models';

/*
 * Budget trials: composites that fan out to parallel branches (plain agents, function-calling agents with
 * tools, nested fans, branches given the forward's options or a share of their own), every model scripted
 * with random answers and random latencies on a manual clock (no wall clock: the test decides which request
 * ends next). Whatever the interleaving, what the provider would bill stays within every limit, and a call
 * that succeeds reports exactly what was billed.
 */

const PRICE = { input: 3, output: 15 }; // US dollars per million tokens, like a mid-size model
beforeAll(() => setModelPrice('trial-model', PRICE));
afterAll(() => setModelPrice('trial-model', null));

/** A seeded random source (mulberry32): trials replay exactly. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A manual clock: `sleep` waits until the test moves time past it, one waiter at a time, earliest first. */
class ManualClock {
  now = 0;
  #order = 0;
  readonly #waiting: { at: number; order: number; wake: () => void }[] = [];

  sleep(ms: number): Promise<void> {
    return new Promise((wake) => this.#waiting.push({ at: this.now + ms, order: this.#order++, wake }));
  }

  get pending(): number {
    return this.#waiting.length;
  }

  /** Wakes the earliest waiter; false when nobody waits. */
  step(): boolean {
    if (this.#waiting.length === 0) return false;
    this.#waiting.sort((a, b) => a.at - b.at || a.order - b.order);
    const next = this.#waiting.shift()!;
    this.now = next.at;
    next.wake();
    return true;
  }
}

/** Lets every promise continuation that can run, run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs `work` to its end, moving the clock whenever everything else waits for it. */
async function drive<T>(clock: ManualClock, work: Promise<T>): Promise<T> {
  let done = false;
  const watched = work.finally(() => {
    done = true;
  });
  watched.catch(() => undefined);
  while (!done) {
    await settle();
    if (done) break;
    if (!clock.step()) {
      await settle();
      if (!done && clock.pending === 0) throw new Error('the call waits for something the clock cannot move');
    }
  }
  return watched;
}

interface Trial {
  models: AsyncCappedMockLLM[];
  inFlight: number;
  maxInFlight: number;
  /** Some request offered tools (their definitions count in its prompt). */
  tools: boolean;
}

const words = (rand: () => number, min: number, max: number) =>
  'lorem ipsum dolor sit amet '.repeat(Math.ceil((min + rand() * (max - min)) / 5));

/** A model with random answers and random latencies on `clock`, counted in `trial`. */
function model(trial: Trial, clock: ManualClock, rand: () => number, toolTurns: number): AsyncCappedMockLLM {
  const llm = new AsyncCappedMockLLM({
    model: 'trial-model',
    maxNewTokens: 64 + Math.floor(rand() * 400),
    responses: (_messages, _params, index) =>
      index < toolTurns
        ? { content: '', toolCalls: [{ name: 'Lookup', arguments: { key: `k${index}` } }] }
        : words(rand, 5, 300),
    delay: async () => {
      trial.inFlight++;
      trial.maxInFlight = Math.max(trial.maxInFlight, trial.inFlight);
      try {
        await clock.sleep(1 + Math.floor(rand() * 50));
      } finally {
        trial.inFlight--;
      }
    },
  });
  trial.models.push(llm);
  if (toolTurns > 0) trial.tools = true;
  return llm;
}

const lookup = asyncTool({
  name: 'Lookup',
  description: `Looks a record up by its key. ${'It answers with every field of the record. '.repeat(20)}`,
  parameters: z.object({ key: z.string() }),
  run: async ({ key }) => `record ${key}`,
});

/** A branch: a plain agent, a function-calling agent with a tool, or a nested fan. */
function branch(trial: Trial, clock: ManualClock, rand: () => number, depth: number): AsyncAgent {
  const kind = rand();
  if (kind < 0.45) return new AsyncAgent({ llm: model(trial, clock, rand, 0) });
  if (kind < 0.8 || depth > 0) {
    const turns = 1 + Math.floor(rand() * 2);
    return new AsyncFunctionCallingAgent({
      llm: model(trial, clock, rand, turns),
      actions: [lookup],
      maxTurn: turns + 1,
    }) as unknown as AsyncAgent;
  }
  return fan(trial, clock, rand, depth + 1, 2 + Math.floor(rand() * 2));
}

/** A composite that calls its branches at once, each given the forward's options, a share, or nothing. */
function fan(trial: Trial, clock: ManualClock, rand: () => number, depth: number, width: number): AsyncAgent {
  const branches = Array.from({ length: width }, () => branch(trial, clock, rand, depth));
  const modes = branches.map(() => rand());
  class Fan extends AsyncAgent {
    parts = branches;
    override async forward(messages: AgentMessage[], options: Record<string, unknown>) {
      const replies = await Promise.all(
        this.parts.map((part, index) => {
          const mode = modes[index]!;
          if (mode < 0.3) return part.call(messages, options); // the forward's options: the same budget again
          if (mode < 0.5) return part.call(messages, { budget: { tokens: 1_500, usd: 0.01 } }); // a share
          return part.call(messages); // the caller's budget, inherited
        }),
      );
      return replies.map((reply) => String(reply.content)).join('\n');
    }
  }
  return new Fan();
}

function budgetFor(rand: () => number): Budget {
  const tokens = 300 + Math.floor(rand() * 20_000);
  const usd = tokens * (0.5 + rand()) * 6e-6;
  const pick = rand();
  if (pick < 0.35) return { tokens };
  if (pick < 0.65) return { usd };
  if (pick < 0.85) return { tokens, usd };
  return { tokens, modelCalls: 2 + Math.floor(rand() * 8) };
}

describe('budget trials: parallel branches never spend past the limit', () => {
  it('holds over 60 trials of random fan-outs, depths, answers and latencies', async () => {
    const figures = {
      trials: 0,
      succeeded: 0,
      refused: 0,
      overlapped: 0,
      requests: 0,
      maxInFlight: 0,
      usdLimited: 0,
      withTools: 0,
    };
    let worst = 0; // the largest share of a limit ever billed
    for (let seed = 1; seed <= 60; seed++) {
      const rand = random(seed);
      const clock = new ManualClock();
      const trial: Trial = { models: [], inFlight: 0, maxInFlight: 0, tools: false };
      const root = fan(trial, clock, rand, 0, 2 + Math.floor(rand() * 7));
      const budget = budgetFor(rand);
      let usage: CallUsage | undefined;
      try {
        const reply = await drive(clock, root.call('go', { sessionId: seed, budget }));
        usage = (reply.extraInfo as { usage: CallUsage }).usage;
        figures.succeeded++;
      } catch (error) {
        if (!(error instanceof BudgetExceededError)) throw error;
        figures.refused++;
      }
      const billed = trial.models.reduce((sum, llm) => sum + llm.total(), 0);
      const cost = trial.models.reduce((sum, llm) => sum + llm.cost(PRICE), 0);
      const calls = trial.models.reduce((sum, llm) => sum + llm.spent.length, 0);
      if (budget.tokens !== undefined) {
        expect(billed, `seed ${seed}`).toBeLessThanOrEqual(budget.tokens);
        worst = Math.max(worst, billed / budget.tokens);
      }
      if (budget.usd !== undefined) {
        expect(cost, `seed ${seed}`).toBeLessThanOrEqual(budget.usd * (1 + 1e-9));
        worst = Math.max(worst, cost / budget.usd);
      }
      if (budget.modelCalls !== undefined)
        expect(calls, `seed ${seed}`).toBeLessThanOrEqual(budget.modelCalls);
      if (usage !== undefined) {
        expect(usage.totalTokens, `seed ${seed}`).toBe(billed);
        expect(usage.modelCalls, `seed ${seed}`).toBe(calls);
        expect(usage.usd, `seed ${seed}`).toBeCloseTo(cost, 12);
      }
      figures.trials++;
      figures.requests += calls;
      if (budget.usd !== undefined) figures.usdLimited++;
      if (trial.tools) figures.withTools++;
      if (trial.maxInFlight > 1) figures.overlapped++;
      figures.maxInFlight = Math.max(figures.maxInFlight, trial.maxInFlight);
    }
    // The trials are worth their name: requests overlapped, some calls fit, some were refused.
    expect(figures.overlapped).toBeGreaterThan(40);
    expect(figures.succeeded).toBeGreaterThan(5);
    expect(figures.refused).toBeGreaterThan(5);
    expect(figures.usdLimited).toBeGreaterThan(20);
    expect(figures.withTools).toBeGreaterThan(40);
    expect(worst).toBeLessThanOrEqual(1);
    console.log(`budget trials: ${JSON.stringify({ ...figures, worstShareOfLimit: worst.toFixed(3) })}`);
  });
});
