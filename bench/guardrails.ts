import { performance } from 'node:perf_hooks';
import { AsyncAgent } from '../src/agents/async-agent';
import { AsyncStreamingAgent } from '../src/agents/async-streaming-agent';
import { guardrail } from '../src/hooks/guardrail';
import { AsyncBaseLLM } from '../src/llms/base-llm';
import type { ChatMessage, LLMCallParams, StreamChunk } from '../src/llms/types';
import { ModelStatusCode } from '../src/schema/status';
import { AsyncMockLLM } from '../src/testing/mock-llm';
import type { Suite } from './report';

/**
 * Guardrails and budgets. A model streams at a fixed rate (one 4-character chunk every 2 ms); a parallel
 * input guardrail trips 40 ms in: how many chunks the model still sent after the trip (the tokens spent past
 * the tripwire), and how many reached the caller. An output guardrail on the stream trips on a chunk: how many
 * chunks the model sent after it. And what a budget costs per call (a plain call, budgeted and not).
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
    await drain(agent.call('hello'));
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
