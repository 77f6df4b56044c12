import { AsyncHTTPAgentClient, HTTPAgentServer } from '../src/distributed/http/index';
import { AsyncStreamingAgent } from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
import type { Suite } from './report';

/**
 * Relaying a long streamed reply: a zero-latency mock model streams n characters in 4-character chunks, read
 * through the streaming driver (`AsyncStreamingAgent.call`) and through `lagent serve`'s SSE route
 * (`HTTPAgentServer`'s `/chat_completion/stream`, read by `AsyncHTTPAgentClient.stream`). A relay linear in the
 * reply's length takes about 4x as long for 200,000 characters as for 50,000; one that compares each chunk's
 * whole text with the previous chunk's takes about 16x.
 */

const CHUNK = 4;
const LONG = 200_000;
const SHORT = 50_000;

const text = (length: number) => 'abcdefghij'.repeat(length / 10);

function streamingAgent(length: number): AsyncStreamingAgent {
  return new AsyncStreamingAgent({
    llm: new AsyncMockLLM({ responses: () => text(length), chunkSize: CHUNK, record: false }),
    memory: null,
  });
}

/** Milliseconds to read a whole stream; the best of `runs` (the machine's other work only ever adds time). */
async function best(runs: number, read: () => Promise<number>): Promise<number> {
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const began = performance.now();
    const received = await read();
    fastest = Math.min(fastest, performance.now() - began);
    if (received === 0) throw new Error('the stream was empty');
  }
  return fastest;
}

async function throughDriver(length: number): Promise<number> {
  const agent = streamingAgent(length);
  return best(7, async () => {
    let received = 0;
    for await (const chunk of agent.call('hi')) received += chunk.delta?.length ?? 0;
    return received;
  });
}

async function throughServer(length: number): Promise<number> {
  const server = new HTTPAgentServer({ agent: streamingAgent(length), port: 0 });
  const client = new AsyncHTTPAgentClient({ url: await server.listen() });
  try {
    return await best(5, async () => {
      let received = 0;
      for await (const chunk of client.stream('hi')) received += chunk.delta?.length ?? 0;
      return received;
    });
  } finally {
    client.close();
    await server.close();
  }
}

export const run: Suite = async (report) => {
  await throughDriver(SHORT); // warm-up
  const driverShort = await throughDriver(SHORT);
  const driverLong = await throughDriver(LONG);
  report({
    name: `streaming driver: ${LONG.toLocaleString('en')} characters in ${CHUNK}-character chunks`,
    value: driverLong,
    unit: 'ms',
    note: `${SHORT.toLocaleString('en')} characters: ${driverShort.toFixed(1)} ms`,
  });
  report({
    name: `streaming driver: time for ${LONG.toLocaleString('en')} / time for ${SHORT.toLocaleString('en')} characters`,
    value: driverLong / driverShort,
    unit: '×',
    target: 6,
    note: 'linear ≈ 4×, quadratic ≈ 16×',
  });
  await throughServer(SHORT); // warm-up
  const serverShort = await throughServer(SHORT);
  const serverLong = await throughServer(LONG);
  report({
    name: `lagent serve SSE: ${LONG.toLocaleString('en')} characters in ${CHUNK}-character chunks, client to client`,
    value: serverLong,
    unit: 'ms',
    note: `${SHORT.toLocaleString('en')} characters: ${serverShort.toFixed(1)} ms`,
  });
  report({
    name: `lagent serve SSE: time for ${LONG.toLocaleString('en')} / time for ${SHORT.toLocaleString('en')} characters`,
    value: serverLong / serverShort,
    unit: '×',
    target: 6,
    note: 'linear ≈ 4×, quadratic ≈ 16×',
  });
  report({
    name: `lagent serve: a short call while five ${LONG.toLocaleString('en')}-character streams are relayed`,
    value: await shortCallDuringStreams(),
    unit: 'ms',
    note: 'median of 9 calls, each made while the five streams are mid-way (same server, other sessions)',
  });
};

/** A short call's latency while five long replies stream through the same server to five clients. */
async function shortCallDuringStreams(): Promise<number> {
  const agent = new AsyncStreamingAgent({
    llm: new AsyncMockLLM({
      responses: (messages) => (messages.at(-1)?.content === 'long' ? text(LONG) : 'ok'),
      chunkSize: CHUNK,
      record: false,
    }),
    memory: null,
  });
  const server = new HTTPAgentServer({ agent, port: 0 });
  const url = await server.listen();
  const clients = Array.from({ length: 5 }, () => new AsyncHTTPAgentClient({ url }));
  const probe = new AsyncHTTPAgentClient({ url });
  const times: number[] = [];
  try {
    await probe.call('short', { sessionId: 'probe' });
    for (let round = 0; round < 3; round++) {
      let started = 0;
      let onStarted: () => void = () => {};
      const allStarted = new Promise<void>((resolve) => {
        onStarted = resolve;
      });
      const streams = clients.map(async (client, i) => {
        let received = 0;
        for await (const chunk of client.stream('long', { sessionId: `long-${i}` })) {
          received += chunk.delta?.length ?? 0;
          if (received >= LONG / 10 && received - (chunk.delta?.length ?? 0) < LONG / 10 && ++started === 5)
            onStarted();
        }
        return received;
      });
      await allStarted;
      for (let i = 0; i < 3; i++) {
        const began = performance.now();
        await probe.call('short', { sessionId: 'probe' });
        times.push(performance.now() - began);
      }
      await Promise.all(streams);
    }
  } finally {
    for (const client of [...clients, probe]) client.close();
    await server.close();
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}
