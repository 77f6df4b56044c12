import { randomUUID } from 'node:crypto';
import { HTTPAgentServer } from '../src/distributed/http/index';
import { AsyncAgent, AsyncStreamingAgent } from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
import { runLoad } from './load';
import type { Suite } from './report';

/**
 * What each protocol's encoding adds to a streamed reply of 1,000 chunks (a zero-latency mock model streaming
 * 4,000 characters in 4-character chunks), against the same reply on lagent's own SSE route
 * (`/chat_completion/stream`): each route read whole by a raw `fetch` on one keep-alive connection, in rounds
 * that run every route once. What a reply costs is the process's CPU time (server and reader both live here),
 * which other processes on a shared machine disturb far less than the wall clock; a route's overhead is the
 * median over rounds of its CPU time over lagent's in the same round. The AI SDK and AG-UI routes run their
 * calls as runs, streamed from the run's log (so a client can come back for them): their figure is against the
 * SSE route too, with what they cost over lagent's own run stream (`POST /runs`, then `GET /runs/{id}/stream`)
 * beside it, and the run stream's own cost over the SSE route. And calls/s of `/v1/chat/completions` against
 * `/chat_completion` under the same closed-loop load.
 */

const CHUNKS = 1_000;
const CHUNK = 4;
const RUNS = 120;

type Route = {
  name: string;
  path: string;
  body: (session: string) => unknown;
  headers?: Record<string, string>;
  /** Its calls are runs: compared with lagent's run stream. */
  run?: boolean;
};

/** Lagent's run stream: `POST /runs`, then its log as SSE. */
const RUN_STREAM: Route = {
  name: "lagent's run stream",
  path: '/runs',
  body: (session) => ({ message: ['hi'], session_id: session }),
};

const ROUTES: Route[] = [
  {
    name: "lagent's SSE",
    path: '/chat_completion/stream',
    body: (session) => ({ message: ['hi'], session_id: session }),
  },
  {
    name: 'OpenAI chat completions (stream)',
    path: '/v1/chat/completions',
    body: (session) => ({
      model: 'agent',
      messages: [{ role: 'user', content: 'hi' }],
      user: session,
      stream: true,
    }),
  },
  RUN_STREAM,
  {
    name: 'AI SDK UI message stream',
    run: true,
    path: '/api/chat',
    body: (session) => ({
      id: session,
      messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
    }),
  },
  {
    name: 'AG-UI',
    run: true,
    path: '/ag-ui',
    headers: { accept: 'text/event-stream' },
    body: (session) => ({
      threadId: session,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'hi' }],
      tools: [],
      context: [],
    }),
  },
  {
    name: 'A2A SendStreamingMessage',
    path: '/a2a',
    headers: { 'a2a-version': '1.0' },
    body: (session) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: {
        message: { messageId: randomUUID(), contextId: session, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      },
    }),
  },
];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function readWhole(url: string, route: Route): Promise<number> {
  let response = await fetch(`${url}${route.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...route.headers },
    body: JSON.stringify(route.body(randomUUID())),
  });
  if (route === RUN_STREAM && response.status === 202) {
    const { runId } = (await response.json()) as { runId: string };
    response = await fetch(`${url}/runs/${runId}/stream`);
  }
  if (response.status !== 200)
    throw new Error(`${route.path} answered ${response.status}: ${await response.text()}`);
  let bytes = 0;
  for await (const chunk of response.body!) bytes += (chunk as Uint8Array).length;
  return bytes;
}

export const run: Suite = async (report) => {
  const agent = new AsyncStreamingAgent({
    name: 'agent',
    llm: new AsyncMockLLM({ responses: () => 'abcd'.repeat(CHUNKS), chunkSize: CHUNK, record: false }),
    memory: { maxSessions: 100 },
  });
  const server = new HTTPAgentServer({ agent, port: 0 });
  const url = await server.listen();
  // times.get(route)[round]: the CPU milliseconds the route took in each round.
  const times = new Map<string, number[]>(ROUTES.map((route) => [route.name, []]));
  const sizes = new Map<string, number>();
  try {
    for (const route of ROUTES) await readWhole(url, route); // warm-up
    for (let round = 0; round < RUNS; round++) {
      for (const route of ROUTES) {
        const began = process.cpuUsage();
        sizes.set(route.name, await readWhole(url, route));
        const spent = process.cpuUsage(began);
        times.get(route.name)!.push((spent.user + spent.system) / 1000);
      }
    }
  } finally {
    await server.close();
  }
  const baseline = times.get(ROUTES[0]!.name)!;
  report({
    name: `${ROUTES[0]!.name}: a reply of ${CHUNKS.toLocaleString('en')} chunks, read whole (CPU time)`,
    value: Math.min(...baseline),
    unit: 'ms',
    note: `${(sizes.get(ROUTES[0]!.name)! / 1024).toFixed(0)} KiB on the wire; best of ${RUNS}`,
  });
  const runs = times.get(RUN_STREAM.name)!;
  for (const route of ROUTES.slice(1)) {
    const own = times.get(route.name)!;
    const overhead = (against: number[]) =>
      (median(own.map((time, round) => time / against[round]!)) - 1) * 100;
    const best = (against: number[]) =>
      `best ${Math.min(...own).toFixed(1)} vs ${Math.min(...against).toFixed(1)} ms, ${(sizes.get(route.name)! / 1024).toFixed(0)} KiB on the wire`;
    if (route === RUN_STREAM) {
      report({
        name: `${route.name}: what the run's log costs on ${CHUNKS.toLocaleString('en')} chunks vs lagent's SSE`,
        value: overhead(baseline),
        unit: '%',
        note: `CPU time, median of ${RUNS} rounds; ${best(baseline)}`,
      });
      continue;
    }
    report({
      name: `${route.name}: encoding overhead on ${CHUNKS.toLocaleString('en')} chunks vs lagent's SSE`,
      value: overhead(baseline),
      unit: '%',
      target: 5,
      note: `CPU time, median of ${RUNS} rounds; ${best(baseline)}${route.run ? `; ${overhead(runs).toFixed(0)}% over lagent's run stream (both read the run's log, which makes the reply resumable)` : ''}`,
    });
  }

  const plain = new AsyncAgent({
    name: 'agent',
    llm: new AsyncMockLLM({ responses: () => 'hi', record: false }),
    memory: { maxSessions: 1_000 },
  });
  const calls = new HTTPAgentServer({ agent: plain, port: 0 });
  const callsUrl = await calls.listen();
  try {
    await runLoad(callsUrl, 32, 0, 2_000);
    await runLoad(callsUrl, 32, 0, 2_000, { route: 'openai' });
    // Interleaved rounds, the best of each: a shared machine's other work only ever slows a round down.
    let native = 0;
    let openai = 0;
    let errors = 0;
    for (let round = 0; round < 3; round++) {
      const lagent = await runLoad(callsUrl, 32, 300, 2_000);
      const chat = await runLoad(callsUrl, 32, 300, 2_000, { route: 'openai' });
      native = Math.max(native, lagent.rate);
      openai = Math.max(openai, chat.rate);
      errors += lagent.errors + chat.errors;
    }
    report({
      name: '/v1/chat/completions calls/s vs /chat_completion, 32 connections',
      value: openai / native,
      unit: '×',
      note: `${openai.toFixed(0)} vs ${native.toFixed(0)} calls/s, the best of 3 interleaved rounds; ${errors} errors`,
    });
  } finally {
    await calls.close();
  }
};
