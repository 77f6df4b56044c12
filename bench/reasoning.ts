/**
 * What reasoning costs on the way through, streamed by an in-process AI SDK model (no HTTP) through
 * `AsyncAISDKModel` and an `AsyncStreamingAgent` to the consumer, and through the model client alone:
 * - a reasoning delta passed on as a chunk against the same number of parts the client drops (what reasoning
 *   parts were before): what passing reasoning through adds per chunk;
 * - a reasoning chunk against a text chunk;
 * - `AsyncAgent.call` per call with a model that reports no reasoning (compare with `core`'s figure).
 */
import { AsyncAgent } from '../src/agents/async-agent';
import { AsyncStreamingAgent } from '../src/agents/async-streaming-agent';
import type { AISDKLanguageModel, AISDKStreamPart } from '../src/llms/ai-sdk-types';
import { AsyncAISDKModel } from '../src/llms/async-ai-sdk-model';
import { AsyncMockLLM } from '../src/testing/mock-llm';
import type { Suite } from './report';

const CHUNKS = 400;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** What a stream's `CHUNKS` parts are: reasoning deltas, text deltas, or parts the client drops. */
type Kind = 'reasoning' | 'text' | 'dropped';

/** The parts of one streamed reply: `CHUNKS` parts of the kind, then one text delta. */
function parts(kind: Kind): AISDKStreamPart[] {
  const reasoning = kind === 'reasoning';
  const list: Record<string, unknown>[] = [{ type: 'stream-start', warnings: [] }];
  if (reasoning) list.push({ type: 'reasoning-start', id: 'r' });
  else list.push({ type: 'text-start', id: 't' });
  for (let i = 0; i < CHUNKS; i++) {
    list.push(
      kind === 'reasoning'
        ? { type: 'reasoning-delta', id: 'r', delta: 'word ' }
        : kind === 'text'
          ? { type: 'text-delta', id: 't', delta: 'word ' }
          : { type: 'raw', rawValue: 'word ' },
    );
  }
  if (reasoning) list.push({ type: 'reasoning-end', id: 'r' }, { type: 'text-start', id: 't' });
  list.push({ type: 'text-delta', id: 't', delta: 'done' }, { type: 'text-end', id: 't' });
  list.push({
    type: 'finish',
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: {
      inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: CHUNKS, text: CHUNKS, reasoning: 0 },
    },
  });
  return list as unknown as AISDKStreamPart[];
}

/** An AI SDK model (specification v4) that streams a prepared list of parts at once. */
function streamingModel(kind: Kind): AISDKLanguageModel {
  const list = parts(kind);
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'instant',
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: () =>
      Promise.resolve({
        stream: new ReadableStream<AISDKStreamPart>({
          start(controller) {
            for (const part of list) controller.enqueue(part);
            controller.close();
          },
        }),
      }),
  };
}

/**
 * CPU µs per chunk of `rounds` streams. CPU time, not wall time: the figure is this process's work, which a
 * machine shared with other work does not change as much.
 */
async function perChunk(run: () => Promise<void>, rounds: number): Promise<number> {
  const before = process.cpuUsage();
  for (let round = 0; round < rounds; round++) await run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (rounds * CHUNKS);
}

export const run: Suite = async (report) => {
  const messages = [{ role: 'user', content: 'think' }];
  const text = new AsyncAISDKModel({ model: streamingModel('text') });
  const thought = new AsyncAISDKModel({ model: streamingModel('reasoning') });
  const dropped = new AsyncAISDKModel({ model: streamingModel('dropped') });
  const textAgent = new AsyncStreamingAgent({ llm: text, memory: null });
  const thoughtAgent = new AsyncStreamingAgent({ llm: thought, memory: null });
  const droppedAgent = new AsyncStreamingAgent({ llm: dropped, memory: null });
  const drainAgent = (agent: AsyncStreamingAgent) => async () => {
    for await (const _chunk of agent.call('think')) {
      // consumed
    }
  };
  const drainModel = (llm: AsyncAISDKModel) => async () => {
    for await (const _chunk of llm.streamChat(messages)) {
      // consumed
    }
  };
  // Warm up both paths, then interleave the measurements so the machine's state is shared.
  for (let i = 0; i < 30; i++) {
    await drainAgent(textAgent)();
    await drainAgent(thoughtAgent)();
    await drainAgent(droppedAgent)();
  }
  const agentText: number[] = [];
  const agentThought: number[] = [];
  const agentDropped: number[] = [];
  const modelText: number[] = [];
  const modelThought: number[] = [];
  const modelDropped: number[] = [];
  for (let round = 0; round < 15; round++) {
    agentText.push(await perChunk(drainAgent(textAgent), 10));
    agentThought.push(await perChunk(drainAgent(thoughtAgent), 10));
    agentDropped.push(await perChunk(drainAgent(droppedAgent), 10));
    modelText.push(await perChunk(drainModel(text), 10));
    modelThought.push(await perChunk(drainModel(thought), 10));
    modelDropped.push(await perChunk(drainModel(dropped), 10));
  }
  report({
    name: 'reasoning passing through, added per chunk: AsyncAISDKModel and AsyncStreamingAgent',
    value: median(agentThought.map((value, index) => value - agentDropped[index]!)),
    unit: 'µs',
    target: 1,
    note: `CPU time of a reasoning delta passed on as a chunk minus a part dropped, ${CHUNKS} a stream, in-process model, median of 15 paired rounds (${median(agentThought).toFixed(2)} vs ${median(agentDropped).toFixed(2)} µs)`,
  });
  report({
    name: 'reasoning passing through, added per chunk: AsyncAISDKModel.streamChat',
    value: median(modelThought.map((value, index) => value - modelDropped[index]!)),
    unit: 'µs',
    target: 1,
    note: `${median(modelThought).toFixed(2)} vs ${median(modelDropped).toFixed(2)} µs`,
  });
  const agentDifference = median(agentThought.map((value, index) => value - agentText[index]!));
  report({
    name: 'reasoning chunk vs text chunk, through AsyncAISDKModel and AsyncStreamingAgent',
    value: agentDifference,
    unit: 'µs',
    target: 1,
    note: `CPU time per chunk, ${CHUNKS} chunks a stream, in-process model, median of 15 paired rounds; a text chunk ${median(agentText).toFixed(2)} µs, a reasoning chunk ${median(agentThought).toFixed(2)} µs`,
  });
  report({
    name: 'reasoning chunk vs text chunk, through AsyncAISDKModel.streamChat',
    value: median(modelThought.map((value, index) => value - modelText[index]!)),
    unit: 'µs',
    target: 1,
    note: `a text chunk ${median(modelText).toFixed(2)} µs, a reasoning chunk ${median(modelThought).toFixed(2)} µs`,
  });

  // The call path when the model reports no reasoning (the common case).
  const agent = new AsyncAgent({
    llm: new AsyncMockLLM({ responses: () => 'ok', record: false }),
    template: 'You are terse.',
  });
  let session = 0;
  const call = async () => {
    if (++session % 50_000 === 0) for (const id of agent.memory!.sessions()) agent.memory!.reset(id);
    await agent.call('hi', { sessionId: session });
  };
  for (let i = 0; i < 50_000; i++) await call();
  const perCall: number[] = [];
  for (let sample = 0; sample < 15; sample++) {
    const before = process.cpuUsage();
    for (let i = 0; i < 20_000; i++) await call();
    const used = process.cpuUsage(before);
    perCall.push((used.user + used.system) / 20_000);
  }
  report({
    name: 'AsyncAgent.call without reasoning, single turn, new session each call',
    value: median(perCall),
    unit: 'µs',
    target: 5,
    note: 'CPU time per call, median of 15 runs of 20,000 calls (the core suite measures the same call in wall time)',
  });
};
