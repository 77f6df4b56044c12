import { fileURLToPath } from 'node:url';
import { type ProcessResult, type ReadyProcess, runProcess, startProcess } from '../helpers/processes';

/** Helpers of the command-line tests: the CLI runs from source under tsx, in child processes. */

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** The command that runs the CLI from source. */
export const NODE_ARGS = ['--import', 'tsx', CLI];

/** The environment of every child: this one (with the test run's marker), minus variables that change defaults. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of [
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'OPENAI_MODEL',
    'LAGENT_MODEL',
    'LAGENT_TOKEN',
    'REDIS_URL',
  ]) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

/** How a `lagent` command ended, and what it printed. */
export type RunResult = ProcessResult;

/** Runs `lagent ...args` to its end. */
export function runCli(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return runProcess(process.execPath, [...NODE_ARGS, ...args], {
    env: childEnv(options.env),
    cwd: options.cwd ?? ROOT,
    timeoutMs: options.timeoutMs ?? 30_000,
  });
}

/** A long-running `lagent` command (serve, worker): `stop()` sends SIGTERM (or the signal given), SIGKILL after 10 s. */
export type RunningCli = ReadyProcess;

/** Starts `lagent ...args` and waits for a stdout line matching `ready`. */
export function startCli(
  args: string[],
  ready: RegExp,
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RunningCli> {
  return startProcess(process.execPath, [...NODE_ARGS, ...args], ready, {
    env: childEnv(options.env),
    cwd: ROOT,
    timeoutMs: options.timeoutMs ?? 20_000,
    graceMs: 10_000,
    label: `lagent ${args.join(' ')}`,
  });
}
