import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Framework } from './contenders';
import type { ToolFramework } from './tool-contenders';

/**
 * Starting benchmark processes and reading their figures. Each side-by-side scenario runs every
 * framework in a fresh process of its own (`runner.ts`), as users run them: whatever one framework
 * switches on process-wide (OpenAI Agents JS's `AsyncLocalStorage` turns on promise hooks for every
 * promise in the process) then weighs on it alone, and the order of scenarios no longer matters.
 */

/** The line a runner prints its figures on: this prefix, then JSON. */
export const RESULT_PREFIX = 'bench-result ';

export const SCENARIOS = ['per-call', 'concurrent', 'queue', 'tool-turn'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** Per-call time against a 0 ms model, a new session each call. */
export interface PerCallResult {
  /** Calls per round. */
  calls: number;
  /** Rounds run to warm up (not measured). */
  warmUpRounds: number;
  /** µs per call in each measured round. */
  rounds: number[];
  /** Median of `rounds`, µs. */
  median: number;
}

/** 10,000 concurrent sessions against a 50 ms model. */
export interface ConcurrentResult {
  /** Wall time of each measured round, s. */
  walls: number[];
  /** Heap growth of each measured round (everything the sessions keep still reachable), MB. */
  heaps: number[];
  /** Medians of `walls` (s) and `heaps` (MB). */
  wall: number;
  heap: number;
}

/** The one-session queue on a lagent-ts `AsyncAgent`: µs per call at each depth, medians over rounds. */
export interface QueueResult {
  depths: number[];
  queued: number[];
  spread: number[];
  rounds: number;
  inOrder: boolean;
}

export interface ScenarioResult {
  'per-call': PerCallResult;
  concurrent: ConcurrentResult;
  queue: QueueResult;
  /** The per-call scenario with one tool call per turn (`tool-contenders.ts`). */
  'tool-turn': PerCallResult;
}

export function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

const RUNNER = fileURLToPath(new URL('./runner.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** Runs `scenario` for `framework` in a fresh Node process and resolves to its figures. */
export async function inOwnProcess<S extends Scenario>(
  framework: Framework | ToolFramework,
  scenario: S,
): Promise<ScenarioResult[S]> {
  const { stdout } = await run(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', RUNNER, framework, scenario],
    {
      cwd: ROOT,
      maxBuffer: 16 * 2 ** 20,
    },
  );
  const line = stdout.split('\n').find((text) => text.startsWith(RESULT_PREFIX));
  if (!line) throw new Error(`${framework} ${scenario}: the runner printed no result\n${stdout}`);
  return JSON.parse(line.slice(RESULT_PREFIX.length)) as ScenarioResult[S];
}

/**
 * Runs `scenario` in `processes` fresh processes per framework, taking turns (a, b, c, a, b, c, ...) so
 * that machine noise hits every framework alike. Resolves to each framework's results, in process order.
 */
export async function alternating<S extends Scenario, F extends Framework | ToolFramework>(
  frameworks: readonly F[],
  scenario: S,
  processes: number,
): Promise<Record<F, ScenarioResult[S][]>> {
  const results = Object.fromEntries(frameworks.map((framework) => [framework, []])) as unknown as Record<
    F,
    ScenarioResult[S][]
  >;
  for (let i = 0; i < processes; i++) {
    for (const framework of frameworks) results[framework].push(await inOwnProcess(framework, scenario));
  }
  return results;
}
