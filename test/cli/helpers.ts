import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Helpers of the command-line tests: the CLI runs from source under tsx, in child processes. */

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** The command that runs the CLI from source. */
export const NODE_ARGS = ['--import', 'tsx', CLI];

/** The environment of every child: this one (with the test run's marker), minus variables that change defaults. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'LAGENT_MODEL', 'LAGENT_TOKEN', 'REDIS_URL']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `lagent ...args` to its end. */
export function runCli(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_ARGS, ...args], {
      env: childEnv(options.env),
      cwd: options.cwd ?? ROOT,
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

/** A long-running `lagent` command (serve, worker). */
export interface RunningCli {
  readonly child: ChildProcess;
  /** The first stdout line matching the ready pattern. */
  readonly line: string;
  output(): { stdout: string; stderr: string };
  /** Sends `signal` and resolves with the exit code; SIGKILL after 10 s. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `lagent ...args` and waits for a stdout line matching `ready`. */
export function startCli(
  args: string[],
  ready: RegExp,
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RunningCli> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_ARGS, ...args], {
      env: childEnv(options.env),
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    };
    const timer = setTimeout(() => {
      void stop('SIGKILL');
      reject(new Error(`lagent ${args.join(' ')} was not ready: ${stdout}${stderr}`));
    }, options.timeoutMs ?? 20_000);
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
      reject(new Error(`lagent ${args.join(' ')} exited (${code}) before it was ready: ${stdout}${stderr}`));
    });
  });
}
