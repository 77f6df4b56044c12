import { spawn } from 'node:child_process';

/**
 * The load generator, run with `node -e`: argv = url, connections, warm-up ms, measured ms, a total rate in
 * calls/s (0: closed loop, each connection sends as soon as its answer is complete; else each connection sends on
 * a fixed schedule, and latency counts from the scheduled time, so a slow answer is not hidden by sending later),
 * and a number of sessions (0: a new session each call; else the calls go round-robin over that many).
 * Prints one JSON line.
 */
const LOAD_GENERATOR = String.raw`
const net = require('node:net');
const [url, connections, warmup, measure, rate, sessions, route] = process.argv.slice(1);
const interval = Number(rate) > 0 ? (1000 * Number(connections)) / Number(rate) : 0;
const { hostname, port } = new URL(url);
const latencies = [], scheduled = [];
let counting = false, stopped = false, count = 0, errors = 0;
function request(id) {
  const openai = route === 'openai';
  const body = openai
    ? JSON.stringify({ model: 'agent', messages: [{ role: 'user', content: 'hello' }], user: id })
    : JSON.stringify({ message: ['hello'], session_id: id });
  return 'POST ' + (openai ? '/v1/chat/completions' : '/chat_completion') + ' HTTP/1.1\r\nHost: ' + hostname + ':' + port +
    '\r\nContent-Type: application/json\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\n\r\n' + body;
}
// Session ids: new ones each call, unique to this run; or round-robin over a pool of \`sessions\`.
const run = Date.now().toString(36);
let calls = 0;
const sessionOf = (index, serial) =>
  Number(sessions) > 0 ? run + '-pool-' + (calls++ % Number(sessions)) : run + '-' + index + '-' + serial;
function connect(index) {
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.setNoDelay(true);
    let buffer = Buffer.alloc(0), sent = 0, due0 = 0, serial = 0;
    let due = performance.now() + Math.random() * interval;
    const send = () => {
      sent = performance.now();
      due0 = interval > 0 ? due : sent;
      socket.write(request(sessionOf(index, serial++)));
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

export interface Load {
  rate: number;
  count: number;
  errors: number;
  p50: number;
  p99: number;
  /** p99 counted from the scheduled send time (open loop), which also counts the generator's own lateness. */
  p99Scheduled: number;
}

/**
 * Sends `POST /chat_completion` load to `url` from a child process (with `route: 'openai'`, `POST
 * /v1/chat/completions` to an agent named `agent`); see the generator above.
 */
export function runLoad(
  url: string,
  connections: number,
  warmupMs: number,
  measureMs: number,
  {
    rate = 0,
    sessions = 0,
    route = 'lagent',
  }: { rate?: number; sessions?: number; route?: 'lagent' | 'openai' } = {},
): Promise<Load> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '-e',
        LOAD_GENERATOR,
        url,
        String(connections),
        String(warmupMs),
        String(measureMs),
        String(rate),
        String(sessions),
        route,
      ],
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
