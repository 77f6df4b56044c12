import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { HTTPAgentServer } from '../src/distributed/index';
import { AsyncAgent } from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
import { runLoad } from './load';
import type { Suite } from './report';

/**
 * Serving agents over HTTP, on a zero-latency mock model: throughput over keep-alive; p99 latency with
 * 100 concurrent connections at 5,000 calls/s (open loop), and with 100 calls always in flight (closed loop); and
 * throughput side by side with Lagent's FastAPI server on uvicorn (its `app.py` with a zero-latency mock agent,
 * test/distributed/http/lagent_http.py) in the same run, under the same load.
 *
 * The load comes from a child process: raw keep-alive sockets, each sending its next call when its previous answer
 * is complete (closed loop) or on a fixed schedule (open loop), so the generator costs little next to the server.
 * Each call is a new session (`session_id` unique), so no session's memory grows over the run. Latency figures
 * depend on the host: on a shared machine, time the server waits for a core shows up in the tail.
 */

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const LAGENT_SCRIPT = fileURLToPath(new URL('../test/distributed/http/lagent_http.py', import.meta.url));

/** Starts Lagent's FastAPI app on uvicorn; resolves to its URL and a stop function, or undefined without FastAPI. */
async function startLagentServer(): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(PYTHON, [LAGENT_SCRIPT, 'serve', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const ready = await new Promise<boolean>((resolve) => {
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      output += text;
      if (output.includes('ready')) resolve(true);
    });
    child.once('exit', () => resolve(false));
    setTimeout(() => resolve(false), 20_000);
  });
  if (!ready) {
    await stop();
    return undefined;
  }
  return { url: `http://127.0.0.1:${port}`, stop };
}

export const run: Suite = async (report) => {
  const agent = new AsyncAgent({
    llm: new AsyncMockLLM({ responses: () => 'hi', record: false }),
    memory: { maxSessions: 1_000 },
  });
  const server = new HTTPAgentServer({ agent, port: 0 });
  const url = await server.listen();
  try {
    await runLoad(url, 32, 0, 3_000); // warm-up: JIT and pools
    const throughput = await runLoad(url, 32, 500, 4_000);
    report({
      name: 'HTTPAgentServer throughput over keep-alive, 32 connections',
      value: throughput.rate,
      unit: 'calls/s',
      target: 5_000,
      atLeast: true,
      note: `${throughput.count} calls, ${throughput.errors} errors, p50 ${throughput.p50.toFixed(2)} ms`,
    });
    const paced = await runLoad(url, 100, 500, 4_000, { rate: 5_000 });
    report({
      name: 'HTTPAgentServer p99 latency, 100 concurrent connections at 5,000 calls/s',
      value: paced.p99,
      unit: 'ms',
      target: 5,
      note: `p50 ${paced.p50.toFixed(2)} ms, ${paced.rate.toFixed(0)} calls/s measured, ${paced.errors} errors; open loop, send to answer; p99 from the scheduled send ${paced.p99Scheduled.toFixed(2)} ms; host load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`,
    });
    const loaded = await runLoad(url, 100, 500, 4_000);
    report({
      name: 'HTTPAgentServer p99 latency, 100 calls always in flight (closed loop, saturated)',
      value: loaded.p99,
      unit: 'ms',
      note: `p50 ${loaded.p50.toFixed(2)} ms at ${loaded.rate.toFixed(0)} calls/s, ${loaded.errors} errors; by Little's law p50 ≈ 100 / throughput`,
    });

    const lagent = await startLagentServer();
    if (lagent === undefined) {
      report({
        name: 'vs Lagent FastAPI server: SKIPPED (python3 with fastapi and uvicorn not found)',
        value: 0,
        unit: '×',
      });
      return;
    }
    try {
      const python = await runLoad(lagent.url, 32, 1_000, 4_000);
      const ours = await runLoad(url, 32, 1_000, 4_000);
      report({
        name: 'Lagent app.py on FastAPI/uvicorn throughput, 32 connections',
        value: python.rate,
        unit: 'calls/s',
        note: `${python.count} calls, ${python.errors} errors, p50 ${python.p50.toFixed(2)} ms`,
      });
      report({
        name: 'HTTPAgentServer throughput vs Lagent’s FastAPI server (same load, same run)',
        value: ours.rate / python.rate,
        unit: '×',
        target: 5,
        atLeast: true,
        note: `${ours.rate.toFixed(0)} vs ${python.rate.toFixed(0)} calls/s`,
      });
    } finally {
      await lagent.stop();
    }
  } finally {
    await server.close();
  }
};
