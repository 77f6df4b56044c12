import { spawn } from 'node:child_process';

/**
 * The closed-loop load of bench/http.ts, for the stores suite: a child process holding raw keep-alive
 * sockets, each sending its next `POST /chat_completion` as soon as its previous answer is complete. argv = url,
 * connections, warm-up ms, measured ms, sessions (0: a new session each call; else the calls go round-robin
 * over that many sessions). Prints one JSON line.
 */
const LOAD_GENERATOR = String.raw`
const net = require('node:net');
const [url, connections, warmup, measure, sessions] = process.argv.slice(1);
const { hostname, port } = new URL(url);
const latencies = [];
let counting = false, stopped = false, count = 0, errors = 0;
function request(id) {
  const body = JSON.stringify({ message: ['hello'], session_id: id });
  return 'POST /chat_completion HTTP/1.1\r\nHost: ' + hostname + ':' + port +
    '\r\nContent-Type: application/json\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\n\r\n' + body;
}
const run = Date.now().toString(36);
let calls = 0;
const sessionOf = (index, serial) =>
  Number(sessions) > 0 ? run + '-pool-' + (calls++ % Number(sessions)) : run + '-' + index + '-' + serial;
function connect(index) {
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.setNoDelay(true);
    let buffer = Buffer.alloc(0), sent = 0, serial = 0;
    const send = () => {
      sent = performance.now();
      socket.write(request(sessionOf(index, serial++)));
    };
    socket.on('connect', send);
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
        if (counting) { count++; latencies.push(performance.now() - sent); }
        if (stopped) { socket.end(); resolve(); return; }
        send();
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
    const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
    process.stdout.write(JSON.stringify({ rate: count / seconds, count, errors, p50: at(0.5), p99: at(0.99) }) + '\n');
  }, Number(measure));
}, Number(warmup));
`;

/** What one closed-loop run measured. */
export interface ClosedLoad {
  /** Answers per second over the measured window. */
  rate: number;
  count: number;
  errors: number;
  /** Send-to-answer latency, ms. */
  p50: number;
  p99: number;
}

/**
 * Runs the closed-loop load against `url` with `connections` keep-alive sockets: a new session each call, or
 * round-robin over `sessions` sessions.
 */
export function closedLoad(
  url: string,
  connections: number,
  warmupMs: number,
  measureMs: number,
  sessions = 0,
): Promise<ClosedLoad> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-e', LOAD_GENERATOR, url, String(connections), String(warmupMs), String(measureMs), String(sessions)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      output += text;
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the load generator exited ${code}`));
      else resolve(JSON.parse(output) as ClosedLoad);
    });
  });
}
