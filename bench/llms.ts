/**
 * LLM client overhead against a local fake OpenAI server (no network):
 * - per-call latency of GPTAPI (sync, through the worker bridge) vs AsyncGPTAPI, same server, same run;
 * - 1,000 concurrent AsyncGPTAPI calls to a server that answers after 20 ms, vs bare fetch() (and, for
 *   information, vs the 20 ms latency bound);
 * - AsyncAISDKModel's overhead per call over calling an in-process AI SDK model's doGenerate directly (no HTTP).
 */
import type { AISDKCallOptions, AISDKLanguageModel } from '../src/llms/ai-sdk-types';
import { AsyncAISDKModel } from '../src/llms/async-ai-sdk-model';
import { AsyncGPTAPI } from '../src/llms/async-gpt-api';
import { GPTAPI } from '../src/llms/gpt-api';
import { AsyncRecordingLLM } from '../src/llms/recording-llm';
import { AsyncReplayLLM } from '../src/llms/replay-llm';
import { startFakeOpenAIWorker } from '../src/testing/fake-openai-worker';
import { AsyncMockLLM } from '../src/testing/mock-llm';
import type { Suite } from './report';

const messages = [{ role: 'user', content: 'ping' }];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** An AI SDK model (specification v4) that answers at once, from memory: what is left is the caller's cost. */
function instantModel(): AISDKLanguageModel {
  const result = {
    content: [{ type: 'text', text: 'pong' }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: {
      inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 1, text: 1, reasoning: 0 },
    },
  };
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'instant',
    doGenerate: () => Promise.resolve(result),
    doStream: () => Promise.reject(new Error('not used')),
  };
}

/**
 * AsyncAISDKModel.chat() vs the same model's doGenerate() called directly with an equivalent prompt, interleaved
 * in rounds of sequential calls; the figure is the median round's difference per call.
 */
async function aiSDKOverhead(report: Parameters<Suite>[0]): Promise<void> {
  const model = instantModel();
  const llm = new AsyncAISDKModel({ model });
  const options: AISDKCallOptions = {
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'ping' }] }],
    maxOutputTokens: 512,
    temperature: 0.8,
  };
  const perRound = 2_000;
  const direct = async () => {
    for (let i = 0; i < perRound; i++)
      await model.doGenerate({ ...options, abortSignal: undefined as never });
  };
  const adapted = async () => {
    for (let i = 0; i < perRound; i++) await llm.chat(messages);
  };
  // Warm-up long enough for both paths to be optimised before the first measured round.
  for (let i = 0; i < 25; i++) {
    await direct();
    await adapted();
  }
  const overheads: number[] = [];
  const adaptedTimes: number[] = [];
  for (let round = 0; round < 15; round++) {
    let started = performance.now();
    await direct();
    const directMs = performance.now() - started;
    started = performance.now();
    await adapted();
    const adaptedMs = performance.now() - started;
    adaptedTimes.push((adaptedMs * 1000) / perRound);
    overheads.push(((adaptedMs - directMs) * 1000) / perRound);
  }
  report({
    name: 'AsyncAISDKModel overhead per call over doGenerate()',
    value: median(overheads),
    unit: 'µs',
    target: 5,
    note: `median of 15 rounds of ${perRound} sequential calls, in-process model (no HTTP); adapter call ${median(adaptedTimes).toFixed(2)} µs in all`,
  });
}

/**
 * AsyncReplayLLM answering each call of a 1,000-call recording (a system prompt, a few turns, a question per
 * call) once: loading the file is left out; the figure is the median of rounds over fresh replayers.
 */
export async function replayPerCall(report: Parameters<Suite>[0]): Promise<void> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'lagent-bench-replay-'));
  try {
    const file = join(dir, 'run.jsonl');
    const calls = 1_000;
    const prompt = (i: number) => [
      { role: 'system', content: 'You are a helpful assistant. Answer briefly and precisely.' },
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'Paris.' },
      { role: 'user', content: `Question number ${i}: and how many people live there?` },
    ];
    const recorder = new AsyncRecordingLLM(
      new AsyncMockLLM({ responses: (_m, _p, i) => `Answer ${i}: about two million.`, record: false }),
      { file },
    );
    for (let i = 0; i < calls; i++) await recorder.chat(prompt(i), { temperature: 0 });
    await recorder.flush();
    const prompts = Array.from({ length: calls }, (_, i) => prompt(i));
    const perCall: number[] = [];
    const loads: number[] = [];
    for (let round = 0; round < 25; round++) {
      let started = performance.now();
      const replay = new AsyncReplayLLM({ file });
      loads.push(performance.now() - started);
      started = performance.now();
      for (let i = 0; i < calls; i++) await replay.chat(prompts[i]!, { temperature: 0 });
      const elapsed = performance.now() - started;
      if (round >= 5) perCall.push((elapsed * 1000) / calls); // the first rounds warm up
    }
    report({
      name: 'replay of a 1,000-call recording: per call',
      value: median(perCall),
      unit: 'µs',
      target: 20,
      note: `AsyncReplayLLM.chat(), 4-message prompts, median of 20 rounds; loading the file ${median(loads).toFixed(1)} ms`,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const run: Suite = async (report) => {
  await aiSDKOverhead(report);
  await replayPerCall(report);
  // Sync vs async: the server runs on another thread, since GPTAPI blocks this one while it waits.
  const server = startFakeOpenAIWorker({ script: 'pong' });
  try {
    const options = { model: 'bench', apiKey: 'sk-bench', baseURL: server.baseURL };
    const syncLLM = new GPTAPI(options);
    const asyncLLM = new AsyncGPTAPI(options);
    const rounds = 300;
    for (let i = 0; i < 30; i++) {
      syncLLM.chat(messages);
      await asyncLLM.chat(messages);
    }
    const syncTimes: number[] = [];
    const asyncTimes: number[] = [];
    // Interleave the two so that machine noise hits both alike.
    for (let i = 0; i < rounds; i++) {
      let started = performance.now();
      syncLLM.chat(messages);
      syncTimes.push(performance.now() - started);
      started = performance.now();
      await asyncLLM.chat(messages);
      asyncTimes.push(performance.now() - started);
    }
    const syncMs = median(syncTimes);
    const asyncMs = median(asyncTimes);
    report({
      name: 'GPTAPI (sync bridge) call latency',
      value: syncMs,
      unit: 'ms',
      note: `median of ${rounds}`,
    });
    report({
      name: 'AsyncGPTAPI call latency',
      value: asyncMs,
      unit: 'ms',
      note: `median of ${rounds}`,
    });
    report({
      name: 'sync/async latency ratio',
      value: syncMs / asyncMs,
      unit: 'x',
      target: 1.5,
      note: 'GPTAPI through the worker bridge vs AsyncGPTAPI, same local server',
    });
    syncLLM.close();
  } finally {
    server.close();
  }

  // 1,000 concurrent calls, each answered after 20 ms by a server on another thread (as a remote one would be).
  const latencyMs = 20;
  const calls = 1_000;
  const slow = startFakeOpenAIWorker({ script: { content: 'ok', delayMs: latencyMs } });
  try {
    const llm = new AsyncGPTAPI({ model: 'bench', apiKey: 'sk-bench', baseURL: slow.baseURL, retry: 0 });
    const body = JSON.stringify({ model: 'bench', messages });
    const viaClient = () =>
      Promise.all(Array.from({ length: calls }, (_, i) => llm.chat(messages, { sessionId: i })));
    const viaFetch = () =>
      Promise.all(
        Array.from({ length: calls }, () =>
          fetch(`${slow.baseURL}/chat/completions`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
          }).then((response) => response.json()),
        ),
      );
    // Rounds alternate between the two, and the ratio is the median of each pair's, so that machine noise and
    // warm-up hit both alike.
    await viaClient(); // opens the connections
    await viaFetch();
    const clientTimes: number[] = [];
    const fetchTimes: number[] = [];
    const ratios: number[] = [];
    for (let i = 0; i < 7; i++) {
      let started = performance.now();
      await viaClient();
      const clientRound = performance.now() - started;
      started = performance.now();
      await viaFetch();
      const fetchRound = performance.now() - started;
      clientTimes.push(clientRound);
      fetchTimes.push(fetchRound);
      ratios.push(clientRound / fetchRound);
    }
    const clientMs = Math.min(...clientTimes);
    const fetchMs = Math.min(...fetchTimes);
    report({
      name: '1,000 concurrent AsyncGPTAPI calls (20 ms server latency)',
      value: clientMs,
      unit: 'ms',
      note: `best of 7; bare fetch() at the same concurrency: ${fetchMs.toFixed(0)} ms`,
    });
    report({
      name: 'AsyncGPTAPI / bare fetch() at 1,000 concurrent calls',
      value: median(ratios),
      unit: 'x',
      target: 1.2,
      note: `median of 7 alternating rounds; best round over best round ${(clientMs / fetchMs).toFixed(2)}x`,
    });
    report({
      name: 'concurrent wall time / latency bound',
      value: clientMs / latencyMs,
      unit: 'x',
      // No target: loopback HTTP cannot reach 2x the latency on this machine (bare fetch() cannot either); the
      // bound that replaced it is the ratio to bare fetch() above.
      note: `${calls} calls vs one ${latencyMs} ms latency; bare fetch() ratio ${(fetchMs / latencyMs).toFixed(1)}x`,
    });
  } finally {
    slow.close();
  }
};
