import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { HTTPAgentServer } from '../src/distributed/index';
import { AsyncAgent } from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
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

/**
 * The load generator, run with `node -e`: argv = url, connections, warm-up ms, measured ms, and a total rate in
 * calls/s (0: closed loop, each connection sends as soon as its answer is complete; else each connection sends on
 * a fixed schedule, and latency counts from the scheduled time, so a slow answer is not hidden by sending later).
 * Prints one JSON line.
 */
const LOAD_GENERATOR = String.raw`
const net = require('node:net');
const [url, connections, warmup, measure, rate] = process.argv.slice(1);
const interval = Number(rate) > 0 ? (1000 * Number(connections)) / Number(rate) : 0;
const { hostname, port } = new URL(url);
const latencies = [], scheduled = [];
let counting = false, stopped = false, count = 0, errors = 0;
function request(id) {
  const body = JSON.stringify({ message: ['hello'], session_id: id });
  return 'POST /chat_completion HTTP/1.1\r\nHost: ' + hostname + ':' + port +
    '\r\nContent-Type: application/json\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\n\r\n' + body;
}
function connect(index) {
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.setNoDelay(true);
    let buffer = Buffer.alloc(0), sent = 0, due0 = 0, serial = 0;
    let due = performance.now() + Math.random() * interval;
    const send = () => {
      sent = performance.now();
      due0 = interval > 0 ? due : sent;
      socket.write(request(index + '-' + serial++));
    };
    const next = () => {
      if (stopped) { socket.end(); resolve(); return; }
      if (interval === 0) { send(); return; }
      due += interval;
      const wait = due - performance.now();
      if (wait > 0) setTimeout(send, wait); else send();
    };
    socket.on('connect', () => (interval > 0 ? setTimeout(send, due - performance.now()) : send()));
    socket.on('data', (chunk) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString('latin1');
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        if (!head.startsWith('HTTP/1.1 200')) errors++;
        buffer = buffer.subarray(end + 4 + length);
        if (counting) { const now = performance.now(); count++; latencies.push(now - sent); scheduled.push(now - due0); }
        next();
      }
    });
    socket.on('error', () => { errors++; resolve(); });
  });
}
const done = Promise.all(Array.from({ length: Number(connections) }, (_, i) => connect(i)));
setTimeout(() => {
  counting = true;
  const started = performance.now();
  setTimeout(async () => {
    counting = false; stopped = true;
    const seconds = (performance.now() - started) / 1000;
    await done;
    latencies.sort((a, b) => a - b);
    scheduled.sort((a, b) => a - b);
    const at = (q, list = latencies) => list[Math.min(list.length - 1, Math.floor(q * list.length))] ?? NaN;
    process.stdout.write(JSON.stringify({ rate: count / seconds, count, errors, p50: at(0.5), p99: at(0.99), p99Scheduled: at(0.99, scheduled) }) + '\n');
  }, Number(measure));
}, Number(warmup));
`;

interface Load {
  rate: number;
  count: number;
  errors: number;
  p50: number;
  p99: number;
  /** p99 counted from the scheduled send time (open loop), which also counts the generator's own lateness. */
  p99Scheduled: number;
}

function runLoad(
  url: string,
  connections: number,
  warmupMs: number,
  measureMs: number,
  rate = 0,
): Promise<Load> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-e', LOAD_GENERATOR, url, String(connections), String(warmupMs), String(measureMs), String(rate)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      output += text;
    });
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the load generator exited ${code}`));
      else resolve(JSON.parse(output) as Load);
    });
  });
}

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
    const paced = await runLoad(url, 100, 500, 4_000, 5_000);
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
