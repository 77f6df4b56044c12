import { performance } from 'node:perf_hooks';
import { AsyncAgent } from '../src/agents/async-agent';
import { AsyncStreamingAgent } from '../src/agents/async-streaming-agent';
import { guardrail } from '../src/agents/interceptors/guardrails/guardrail';
import { AsyncBaseLLM } from '../src/llms/base-llm';
import type { ChatMessage, LLMCallParams, StreamChunk } from '../src/llms/types';
import type { AgentMessage } from '../src/schema/agent-message';
import { ModelStatusCode } from '../src/schema/status';
import { AsyncMockLLM } from '../src/testing/mock-llm';
import type { Suite } from './report';

/**
 * Guardrails and budgets. A model streams at a fixed rate (one 4-character chunk every 2 ms); a parallel
 * input guardrail trips 40 ms in: how many chunks the model still sent after the trip (the tokens spent past
 * the tripwire), and how many reached the caller (none: a streaming call holds its chunks until its parallel
 * input checks passed). An output guardrail on the stream trips on a chunk: how many chunks the model sent
 * after it, and, over trials of checks that answer in a microtask or after a timer, how many chunks at or after
 * the tripping one were delivered (none). What holding each chunk until its check answered costs: per chunk
 * for a check answering in a microtask, and the whole stream's time for a 2 ms check on a model streaming a
 * chunk every 2 ms (the stream is read ahead while a chunk waits, so the delay is about one check, not one
 * per chunk). And what a budget costs per call (a plain call, budgeted and not).
 */

const CHUNK_MS = 2;
const CHUNKS = 200;

/** A model streaming `CHUNKS` chunks at a fixed rate, counting what it sent; it stops when aborted. */
class SteadyModel extends AsyncBaseLLM {
  sent = 0;
  abortedAt: number | undefined;

  async chat(): Promise<string> {
    return 'x';
  }

  override async *streamChat(_messages: ChatMessage[], params?: LLMCallParams): AsyncGenerator<StreamChunk> {
    const signal = params?.signal;
    let content = '';
    for (let i = 0; i < CHUNKS; i++) {
      await new Promise((resolve) => setTimeout(resolve, CHUNK_MS));
      if (signal?.aborted) {
        this.abortedAt ??= this.sent;
        throw signal.reason;
      }
      const delta = i === 120 ? 'BAD ' : 'word';
      content += delta;
      this.sent++;
      yield { state: ModelStatusCode.STREAM_ING, content, delta };
    }
    yield { state: ModelStatusCode.END, content, delta: '' };
  }
}

async function drain(stream: AsyncIterable<unknown>): Promise<number> {
  let received = 0;
  try {
    for await (const _ of stream) received++;
  } catch {
    // the trip
  }
  return received;
}

export const run: Suite = async (report) => {
  // A parallel input check that answers "no" after 40 ms while the model streams.
  const trials = 5;
  let afterTrip = 0;
  let beforeTrip = 0;
  let inputDelivered = 0;
  for (let i = 0; i < trials; i++) {
    const model = new SteadyModel();
    let sentAtTrip = 0;
    const agent = new AsyncStreamingAgent({
      llm: model,
      hooks: [
        guardrail({
          name: 'slow-moderation',
          on: 'input',
          parallel: true,
          check: () =>
            new Promise<string>((resolve) =>
              setTimeout(() => {
                sentAtTrip = model.sent;
                resolve('not allowed');
              }, 40),
            ),
        }),
      ],
    });
    inputDelivered += await drain(agent.call('hello'));
    beforeTrip += sentAtTrip;
    afterTrip += model.sent - sentAtTrip;
  }
  report({
    name: 'parallel input guardrail: chunks the model sent after the trip',
    value: afterTrip / trials,
    unit: 'chunks',
    target: 1,
    note: `${(beforeTrip / trials).toFixed(1)} chunks (${CHUNK_MS} ms apart) streamed while the 40 ms check ran; mean of ${trials}`,
  });
  report({
    name: 'parallel input guardrail that trips: chunks delivered to the caller',
    value: inputDelivered,
    unit: 'chunks',
    target: 0,
    note: `over ${trials} calls; the chunks are held until the check answers, and dropped when it trips`,
  });

  // An output guardrail on the stream, tripping on the chunk that says "BAD".
  let outputAfter = 0;
  let delivered = 0;
  for (let i = 0; i < trials; i++) {
    const model = new SteadyModel();
    const agent = new AsyncStreamingAgent({
      llm: model,
      hooks: [
        guardrail({
          name: 'no-bad',
          on: 'output',
          check: (message) => (String(message.content).includes('BAD') ? 'bad word' : undefined),
        }),
      ],
    });
    delivered += await drain(agent.call('hello'));
    outputAfter += model.sent - 121;
  }
  report({
    name: 'output guardrail on a stream: chunks the model sent after the tripping one',
    value: outputAfter / trials,
    unit: 'chunks',
    target: 0,
    note: `${(delivered / trials).toFixed(0)} chunks delivered, the 121st tripped`,
  });

  // Async output checks: chunks delivered at or after the tripping one, over many streams.
  const streams = 60;
  let blockedDelivered = 0;
  let deliveredBefore = 0;
  for (let i = 0; i < streams; i++) {
    const length = 5 + ((i * 7) % 60);
    const at = (i * 13) % length;
    const text = Array.from({ length }, (_, k) => (k === at ? 'XBAD' : 'word')).join('');
    const timer = i % 2 === 0;
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: [text], chunkSize: 4 }),
      hooks: [
        guardrail({
          name: 'moderation',
          on: 'output',
          check: (message) => {
            const verdict = String(message.content).includes('XBAD') ? 'flagged' : undefined;
            return timer
              ? new Promise<string | undefined>((resolve) => setTimeout(() => resolve(verdict), 1))
              : Promise.resolve(verdict);
          },
        }),
      ],
    });
    const seen: string[] = [];
    try {
      for await (const chunk of agent.call('go')) seen.push(String(chunk.content));
    } catch {
      // the trip
    }
    blockedDelivered += seen.filter((content) => content.includes('XBAD')).length;
    deliveredBefore += seen.length;
  }
  report({
    name: 'async output guardrail: chunks delivered at or after the tripping one',
    value: blockedDelivered,
    unit: 'chunks',
    target: 0,
    note: `${streams} streams of 5-64 chunks, a trip at varied positions, checks answering after a 1 ms timer or in a microtask; ${deliveredBefore} chunks before the trips delivered`,
  });

  // What holding delivery costs per chunk (CPU time, so other processes' load does not count): a check
  // answering in a microtask, against none and one answering at once.
  const perChunk = async (check: ((message: AgentMessage) => unknown) | undefined) => {
    const chunks = 300;
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: () => 'word'.repeat(chunks), chunkSize: 4, record: false }),
      hooks: check === undefined ? [] : [guardrail({ name: 'check', on: 'output', check: check as never })],
    });
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 30; round++) {
      const started = process.cpuUsage();
      for (let call = 0; call < 10; call++) {
        for await (const _ of agent.call('go', { sessionId: call })) {
          // drained
        }
      }
      const used = process.cpuUsage(started);
      best = Math.min(best, (used.user + used.system) / (10 * chunks));
      for (let call = 0; call < 10; call++) agent.memory!.reset(call);
    }
    return best;
  };
  const bare = await perChunk(undefined);
  const syncCheck = await perChunk(() => undefined);
  const microtaskCheck = await perChunk(async () => undefined);
  report({
    name: 'holding each chunk for an async output check (answers in a microtask): CPU cost per chunk',
    value: microtaskCheck - bare,
    unit: 'µs',
    note: `${bare.toFixed(2)} µs per chunk unchecked, ${syncCheck.toFixed(2)} µs with a check answering at once, ${microtaskCheck.toFixed(2)} µs with an async one (its deadline timer included); best of 30 rounds of 10 streams of 300 chunks`,
  });

  // A 2 ms check on a model streaming a chunk every 2 ms: the stream is read ahead while a chunk waits.
  const paced = async (check: boolean) => {
    const model = new SteadyModel();
    const agent = new AsyncStreamingAgent({
      llm: model,
      hooks: check
        ? [
            guardrail({
              name: 'slow-moderation',
              on: 'output',
              check: () =>
                new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), CHUNK_MS)),
            }),
          ]
        : [],
    });
    const started = performance.now();
    await drain(agent.call('hello'));
    return performance.now() - started;
  };
  // Timers on a loaded machine are late by varying amounts: the fastest of several tries, taken in turn.
  let unchecked = Number.POSITIVE_INFINITY;
  let held = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    unchecked = Math.min(unchecked, await paced(false));
    held = Math.min(held, await paced(true));
  }
  report({
    name: `${CHUNKS}-chunk stream at ${CHUNK_MS} ms a chunk, each chunk held for a ${CHUNK_MS} ms check: added time`,
    value: held - unchecked,
    unit: 'ms',
    note: `${unchecked.toFixed(0)} ms unchecked, ${held.toFixed(0)} ms held, fastest of 5 each (checking one chunk at a time would add about ${CHUNKS * CHUNK_MS} ms)`,
  });

  // The cost of a budget on a plain call.
  const llm = new AsyncMockLLM({ responses: (_m, _p, i) => `answer ${i}` });
  const agent = new AsyncAgent({ llm, memory: null as never });
  const calls = 20_000;
  const time = async (options: Record<string, unknown> | undefined) => {
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 5; round++) {
      const started = performance.now();
      for (let i = 0; i < calls; i++) await agent.call('hi', options);
      best = Math.min(best, (performance.now() - started) / calls);
    }
    return best * 1000;
  };
  const plain = await time(undefined);
  const budgeted = await time({ budget: { modelCalls: 5, tokens: 10_000 } });
  report({
    name: 'budgeted call (modelCalls + tokens) vs plain, per call',
    value: budgeted - plain,
    unit: 'µs',
    note: `${plain.toFixed(2)} µs plain, ${budgeted.toFixed(2)} µs budgeted (the budget counts the prompt's tokens)`,
  });
};
