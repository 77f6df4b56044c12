import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** Helpers of the HTTP tests that start servers in other processes (every one is stopped by `stop`). */

export const HERE = fileURLToPath(new URL('.', import.meta.url));
export const LAGENT_SCRIPT = `${HERE}lagent_http.py`;
export const SERVE_FIXTURE = `${HERE}fixtures/serve-agent.ts`;

/** The Python that has Debian's requests, FastAPI and uvicorn: /usr/bin/python3 when it exists. */
export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** Whether that Python can import what the interop scripts need. */
export function pythonHasLagentDeps(): boolean {
  const probe = spawnSync(PYTHON, ['-c', 'import requests, fastapi, uvicorn, pydantic; print(1)'], {
    encoding: 'utf8',
  });
  return probe.stdout?.trim() === '1';
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A child process that prints a line when ready. */
export interface Child {
  readonly process: ChildProcess;
  /** The first line it printed that matched. */
  readonly line: string;
  stop(): Promise<void>;
}

/** Starts a process (environment inherited, so the test-run marker passes on) and waits for a line matching `ready`. */
export function startChild(
  command: string,
  args: string[],
  ready: RegExp,
  timeoutMs = 20_000,
): Promise<Child> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    let errors = '';
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
    };
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${command} ${args.join(' ')} was not ready in ${timeoutMs} ms: ${output}${errors}`));
    }, timeoutMs);
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      errors += text;
    });
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      output += text;
      const line = output.split('\n').find((candidate) => ready.test(candidate));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve({ process: child, line, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited (${code}) before it was ready: ${output}${errors}`));
    });
  });
}

/** Serves the mock agent of fixtures/serve-agent.ts with HTTPAgentServer in a child process; resolves to it and its URL. */
export async function serveInChild(args: string[] = []): Promise<Child & { url: string }> {
  const child = await startChild(process.execPath, ['--import', 'tsx', SERVE_FIXTURE, ...args], /^\{"url"/);
  return Object.assign(child, { url: (JSON.parse(child.line) as { url: string }).url });
}

/** Runs Lagent's HTTPAgentClient (reproduced in lagent_http.py) against `url`; resolves to what it printed. */
export function runLagentClient(url: string, scenario: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [LAGENT_SCRIPT, 'client', url, scenario], { env: process.env });
    let output = '';
    let errors = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      output += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      errors += text;
    });
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`lagent_http.py client exited ${code}: ${errors}`));
      else resolve(JSON.parse(output) as Record<string, unknown>);
    });
  });
}
