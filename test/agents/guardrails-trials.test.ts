import {
  type AgentMessage,
  AsyncFunctionCallingAgent,
  AsyncStreamingAgent,
  asyncTool,
  GuardrailTripped,
  guardrail,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * Trials of the guardrails' promises over many shapes (a seeded generator, so a failure names its trial):
 * streams of 1 to 60 chunks, output checks answering at once, in a microtask or after a timer, one or two
 * guardrails, a trip at any chunk or none; parallel input checks answering in either way while a tool round
 * is reached. Whatever the timing, no blocked chunk and no tool run gets through.
 */

/** A small seeded generator (mulberry32): the same trials on every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Timing = 'sync' | 'microtask' | 'timer';
const TIMINGS: Timing[] = ['sync', 'microtask', 'timer'];

/** A verdict as a check of that timing gives it. */
function answer(timing: Timing, verdict: string | undefined, delayMs: number) {
  if (timing === 'sync') return verdict;
  if (timing === 'microtask') return Promise.resolve().then(() => verdict);
  return new Promise<string | undefined>((resolve) => setTimeout(() => resolve(verdict), delayMs));
}

const TRIALS = 60;

describe('guardrail trials', () => {
  it(`output checks on streams: 0 blocked chunks delivered over ${TRIALS} trials`, async () => {
    const next = random(31);
    let delivered = 0;
    let tripped = 0;
    let blockedDelivered = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const length = 1 + Math.floor(next() * 60);
      // The chunk that holds the marker (none in about one trial in five).
      const at = next() < 0.2 ? -1 : Math.floor(next() * length);
      const words = Array.from({ length }, (_, i) => (i === at ? 'XBAD' : 'word'));
      const text = words.join('');
      const guards = 1 + Math.floor(next() * 2);
      const timings = Array.from({ length: guards }, () => TIMINGS[Math.floor(next() * 3)]!);
      const delays = Array.from({ length: guards }, () => Math.floor(next() * 3));
      const agent = new AsyncStreamingAgent({
        llm: new AsyncMockLLM({ responses: [text], chunkSize: 4 }),
        hooks: timings.map((timing, g) =>
          guardrail({
            name: `g${g}`,
            on: 'output',
            check: (message: AgentMessage) =>
              answer(timing, String(message.content).includes('XBAD') ? 'marker' : undefined, delays[g]!),
          }),
        ),
      });
      const seen: string[] = [];
      let error: unknown;
      try {
        for await (const chunk of agent.call('go')) seen.push(String(chunk.content));
      } catch (caught) {
        error = caught;
      }
      const context = `trial ${trial}: ${length} chunks, marker at ${at}, checks ${timings.join('+')}`;
      blockedDelivered += seen.filter((content) => content.includes('XBAD')).length;
      delivered += seen.length;
      if (at < 0) {
        expect(error, context).toBeUndefined();
        expect(seen.at(-1), context).toBe(text);
      } else {
        tripped++;
        expect(error, context).toBeInstanceOf(GuardrailTripped);
        // What was delivered is the stream up to the marker's chunk, in order (chunks still being checked
        // when a later one trips are not delivered: the trip stops the call at once).
        const before = Array.from({ length: at }, (_, i) => text.slice(0, (i + 1) * 4));
        expect(seen, context).toEqual(before.slice(0, seen.length));
        if (timings.every((timing) => timing === 'sync')) expect(seen, context).toEqual(before);
      }
    }
    expect(blockedDelivered).toBe(0);
    expect(tripped).toBeGreaterThan(TRIALS / 2);
    expect(delivered).toBeGreaterThan(0);
  });

  it(`parallel input checks: 0 tool runs and 0 chunks before a trip over ${TRIALS} trials`, async () => {
    const next = random(14);
    let runs = 0;
    let trips = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const timing = TIMINGS[1 + Math.floor(next() * 2)]!;
      const delay = Math.floor(next() * 4);
      const trips_ = next() < 0.75;
      const calls = 1 + Math.floor(next() * 3);
      const ran: number[] = [];
      const wire = asyncTool({
        name: 'Wire',
        parameters: z.object({ amount: z.number() }),
        run: async ({ amount }) => {
          ran.push(amount);
          return 'sent';
        },
      });
      const agent = new AsyncFunctionCallingAgent({
        llm: new AsyncMockLLM({
          responses: [
            {
              content: '',
              toolCalls: Array.from({ length: calls }, (_, i) => ({
                id: `w${i}`,
                name: 'Wire',
                arguments: { amount: i + 1 },
              })),
            },
            'done',
          ],
        }),
        actions: [wire],
        hooks: [
          guardrail({
            name: 'fraud',
            on: 'input',
            parallel: true,
            check: () => answer(timing, trips_ ? 'fraud' : undefined, delay),
          }),
        ],
      });
      const context = `trial ${trial}: ${timing} check after ${delay} ms, ${calls} calls, trips ${trips_}`;
      let error: unknown;
      try {
        await agent.call('send money');
      } catch (caught) {
        error = caught;
      }
      if (trips_) {
        trips++;
        expect(error, context).toBeInstanceOf(GuardrailTripped);
        runs += ran.length;
      } else {
        expect(error, context).toBeUndefined();
        expect(ran.length, context).toBe(calls);
      }
    }
    expect(runs).toBe(0);
    expect(trips).toBeGreaterThan(TRIALS / 2);
  });

  it(`parallel input checks on streams: nothing delivered before they passed, nothing at all on a trip (${TRIALS} trials)`, async () => {
    const next = random(6);
    for (let trial = 0; trial < TRIALS; trial++) {
      const timing = TIMINGS[1 + Math.floor(next() * 2)]!;
      const delay = Math.floor(next() * 4);
      const trips = next() < 0.5;
      const length = 1 + Math.floor(next() * 30);
      const text = 'word'.repeat(length);
      let passed = false;
      const agent = new AsyncStreamingAgent({
        llm: new AsyncMockLLM({ responses: [text], chunkSize: 4 }),
        hooks: [
          guardrail({
            name: 'moderation',
            on: 'input',
            parallel: true,
            check: async () => {
              const verdict = await answer(timing, trips ? 'off-topic' : undefined, delay);
              passed = verdict === undefined;
              return verdict;
            },
          }),
        ],
      });
      const context = `trial ${trial}: ${timing} check after ${delay} ms, ${length} chunks, trips ${trips}`;
      let early = 0;
      let seen = 0;
      let error: unknown;
      try {
        for await (const _ of agent.call('hello')) {
          seen++;
          if (!passed) early++;
        }
      } catch (caught) {
        error = caught;
      }
      expect(early, context).toBe(0);
      if (trips) {
        expect(error, context).toBeInstanceOf(GuardrailTripped);
        expect(seen, context).toBe(0);
      } else expect(seen, context).toBe(length + 1);
    }
  });
});
