import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';

/**
 * Process helpers of the tests that start real processes: free ports, finding and watching processes
 * (Linux `/proc`), polling until something holds, and running commands to their end or until they are ready.
 */

/** A TCP port of 127.0.0.1 that was free a moment ago (the kernel picks it; the probe is closed again). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** True while a process with this pid exists. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids of the processes whose command line mentions `text` (e.g. a token passed as an argument). */
export function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) found.push(Number(entry));
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  return found;
}

/** Polls `check()` every 20 ms for at most `ms`; resolves to whether it held. */
export async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}

/** Resolves once `check()` holds (polling every 20 ms), or rejects after `ms`. */
export async function waitFor(check: () => boolean, ms = 5000): Promise<void> {
  if (!(await eventually(check, ms))) throw new Error('condition not met in time');
}

/**
 * The test run's marker variable (`LAGENT_TEST_RUN`, set by the suite's global setup), for a child that
 * does not inherit this environment: the suite's teardown finds every process carrying it that still runs.
 */
export function markerEnv(): Record<string, string> {
  const marker = process.env.LAGENT_TEST_RUN;
  return marker ? { LAGENT_TEST_RUN: marker } : {};
}

/** How a command ended, and what it printed. */
export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link runProcess} and {@link startProcess}. */
export interface ProcessOptions {
  /** The child's whole environment (default: this one, which carries the test run's marker). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** {@link runProcess}: SIGKILL after this long (default 30 s). {@link startProcess}: how long it may take to be ready (default 20 s). */
  timeoutMs?: number;
}

/** Runs a command to its end (its output streams closed); SIGKILL after `timeoutMs`. */
export function runProcess(
  command: string,
  args: string[],
  options: ProcessOptions = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running process that printed a line saying it is ready. */
export interface ReadyProcess {
  readonly child: ChildProcess;
  /** The first stdout line that matched the ready pattern. */
  readonly line: string;
  /** What it printed so far. */
  output(): { stdout: string; stderr: string };
  /** Sends `signal` (SIGTERM by default), SIGKILL after the grace period; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Options of {@link startProcess}. */
export interface StartOptions extends ProcessOptions {
  /** The child's stdin (default `'ignore'`). */
  stdin?: 'pipe' | 'ignore';
  /** How long `stop()` waits before SIGKILL (default 10 s). */
  graceMs?: number;
  /** Names the process in errors (default: the command line). */
  label?: string;
}

/**
 * Starts a command and resolves once a stdout line matches `ready`; rejects (and kills it) if it exits
 * first or is not ready within `timeoutMs`. The caller stops it with `stop()`.
 */
export function startProcess(
  command: string,
  args: string[],
  ready: RegExp,
  options: StartOptions = {},
): Promise<ReadyProcess> {
  const label = options.label ?? [command, ...args].join(' ');
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), options.graceMs ?? 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    };
    const timer = setTimeout(() => {
      void stop('SIGKILL');
      reject(new Error(`${label} was not ready in ${timeoutMs} ms: ${stdout}${stderr}`));
    }, timeoutMs);
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      const line = stdout.split('\n').find((candidate) => ready.test(candidate));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve({ child, line, output: () => ({ stdout, stderr }), stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code}) before it was ready: ${stdout}${stderr}`));
    });
  });
}

/** Whether something on 127.0.0.1 accepts a TCP connection on `port` now. */
export function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/** Stops a child with `signal` (SIGKILL after `graceMs`) and waits for it to exit; nothing if it has. */
export async function stopChild(
  child: ChildProcess | undefined,
  signal: NodeJS.Signals,
  graceMs: number,
): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
