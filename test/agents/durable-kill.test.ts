import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/*
 * Kill trials of durable calls. A child process (fixtures/durable-child.ts) runs a durable function-calling
 * agent on a SQLiteStore (journals and the session's memory in the same file) through two user messages of
 * three model rounds each, with side-effect tools; it SIGKILLs itself at its nth kill point (every store
 * write before and after, every model call, every tool before and after its side effect). Other processes
 * then recover the session and finish it, and may be killed too. Every trial checks the outcome against an
 * uninterrupted run.
 *
 * The fixture is bundled once (esbuild) so each process starts in ~0.1 s instead of ~0.5 s under tsx.
 */

const fixture = fileURLToPath(new URL('./fixtures/durable-child.ts', import.meta.url));
const SENDS = ['a1', 'c1', 'a2', 'c2'];
const MODEL_STEPS = ['1:0', '1:1', '1:2', '2:0', '2:1', '2:2'];
const CONCURRENCY = 8;

type Variant = 'sync' | 'async';
interface Ended {
  killed: boolean;
  events: string[];
  output: { state: Record<string, unknown[]>; asked: number } | undefined;
}

let dir: string;
let bundle: string;
let processes = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-durable-kill-'));
  bundle = join(dir, 'child.mjs');
  await build({
    entryPoints: [fixture],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    outfile: bundle,
    logLevel: 'warning',
    // The store loads better-sqlite3 relative to its module: resolve it from the project.
    define: { 'import.meta.url': JSON.stringify(pathToFileURL(fixture).href) },
  });
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs one process of a trial to its end (or its kill). */
function runChild(
  trial: string,
  step: number,
  variant: Variant,
  mode: 'run' | 'recover',
  killAt: number,
): Promise<Ended> {
  const events = join(dir, `${trial}.${step}.events`);
  processes++;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundle], {
      env: {
        ...process.env,
        DB: join(dir, `${trial}.db`),
        COUNTER: join(dir, `${trial}.counter`),
        EVENTS: events,
        VARIANT: variant,
        MODE: mode,
        KILL_AT: String(killAt),
        // V8's code cache of the bundle, shared by the processes: each starts a little faster.
        NODE_COMPILE_CACHE: join(dir, 'compile-cache'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let lines: string[] = [];
      try {
        lines = readFileSync(events, 'utf8').split('\n').filter(Boolean);
      } catch {
        // no kill point reached
      }
      if (signal === 'SIGKILL' && killAt > 0 && lines.length === killAt) {
        resolve({ killed: true, events: lines, output: undefined });
      } else if (code === 0) {
        resolve({ killed: false, events: lines, output: JSON.parse(stdout.trim().split('\n').at(-1)!) });
      } else {
        reject(new Error(`${trial} process ${step} (KILL_AT=${killAt}) ended ${code ?? signal}: ${stderr}`));
      }
    });
  });
}

/** What one trial found. */
interface TrialResult {
  trial: string;
  problems: string[];
  doubled: number;
  unknown: number;
}

/**
 * One trial: a first process killed at `kills[0]`, recovering processes killed at the next kill points,
 * then one recovering process to the end. Checked against `reference` (the stateDict of an uninterrupted run).
 */
async function trial(
  variant: Variant,
  kills: number[],
  reference: Record<string, unknown[]>,
): Promise<TrialResult> {
  const name = `${variant}-${kills.join('-')}`;
  const problems: string[] = [];
  const runs: Ended[] = [];
  for (let i = 0; i <= kills.length; i++) {
    runs.push(await runChild(name, i, variant, i === 0 ? 'run' : 'recover', kills[i] ?? 0));
    if (!runs.at(-1)!.killed) break;
  }
  const last = runs.at(-1)!;
  if (last.killed || last.output === undefined)
    return { trial: name, problems: ['never finished'], doubled: 0, unknown: 0 };

  // Replay the processes' kill points: journal writes of model steps and Send tools, in program order.
  let modelJournaled = 0;
  let sendsStarted = 0;
  let sendsDone = 0;
  const unknown = new Set<string>();
  for (const [i, run] of runs.entries()) {
    // Each process asks the model exactly the steps not yet journaled, in order, from the first of them.
    const asked = run.events.filter((e) => e.startsWith('model:')).map((e) => e.slice('model:'.length));
    const expected = MODEL_STEPS.slice(modelJournaled, modelJournaled + asked.length);
    if (asked.join() !== expected.join()) {
      problems.push(
        `process ${i} asked the model for ${asked.join()} with ${modelJournaled} steps journaled`,
      );
    }
    for (const event of run.events) {
      if (event === 'store:after:appendJournal:model:errands') modelJournaled++;
      if (event === 'store:after:appendJournal:started:Send') sendsStarted++;
      if (event === 'store:after:appendJournal:tool:Send') sendsDone++;
    }
    // Killed with a Send started and no result: the next process reports its outcome as unknown.
    if (run.killed && sendsStarted > sendsDone) unknown.add(SENDS[sendsStarted - 1]!);
  }
  if (last.output.asked !== MODEL_STEPS.length - modelJournaledBefore(runs)) {
    problems.push(`the last process asked the model ${last.output.asked} times`);
  }

  // Side effects: each line is one run of the tool that completed its side effect.
  const counter = readFileSync(join(dir, `${name}.counter`), 'utf8')
    .split('\n')
    .filter(Boolean);
  const all = runs.flatMap((run) => run.events);
  let doubled = 0;
  for (const to of SENDS) {
    const lines = counter.filter((line) => line === `send:${to}`).length;
    const ran = all.filter((e) => e === `tool:after:send:${to}`).length;
    if (lines > 1) doubled++;
    if (lines !== ran) problems.push(`send:${to} has ${lines} lines but ran ${ran} times`);
    if (!unknown.has(to) && lines !== 1) problems.push(`send:${to} ran ${lines} times`);
  }
  for (const q of ['b1', 'b2']) {
    const lines = counter.filter((line) => line === `fetch:${q}`).length;
    if (lines < 1) problems.push(`fetch:${q} never ran`);
  }

  // Memory: the uninterrupted run's, except the Sends whose outcome became unknown.
  const state = structuredClone(last.output.state);
  for (const [key, messages] of Object.entries(state)) {
    for (const [m, message] of messages.entries()) {
      const content = (message as { content: unknown }).content;
      if (!Array.isArray(content)) continue;
      for (const [r, result] of content.entries()) {
        const to = (result as { args?: { to?: string } }).args?.to;
        if (to === undefined || !unknown.has(to)) continue;
        if (!/outcome is unknown/.test(String(result.errmsg))) {
          problems.push(`send:${to} should have come back as unknown, got ${JSON.stringify(result)}`);
        }
        content[r] = (reference[key]![m] as { content: unknown[] }).content[r];
      }
    }
  }
  if (JSON.stringify(state) !== JSON.stringify(reference)) {
    problems.push(`final memory differs: ${JSON.stringify(state)}`);
  }
  return { trial: name, problems, doubled, unknown: unknown.size };
}

/** Model steps journaled by every process before the last. */
function modelJournaledBefore(runs: Ended[]): number {
  return runs
    .slice(0, -1)
    .flatMap((run) => run.events)
    .filter((e) => e === 'store:after:appendJournal:model:errands').length;
}

/** Runs `tasks` at most `limit` at a time. */
async function pool<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

describe('durable calls killed at every point', () => {
  it('recover completes every killed session: same memory, no side effect twice, no model step asked again', async () => {
    const references = new Map<Variant, { state: Record<string, unknown[]>; points: number }>();
    for (const variant of ['sync', 'async'] as const) {
      const run = await runChild(`${variant}-reference`, 0, variant, 'run', 0);
      expect(run.output!.asked).toBe(MODEL_STEPS.length);
      references.set(variant, { state: run.output!.state, points: run.events.length });
    }
    const tasks: (() => Promise<TrialResult>)[] = [];
    for (const variant of ['sync', 'async'] as const) {
      const { state, points } = references.get(variant)!;
      // Killed once, at every point.
      for (let n = 1; n <= points; n++) tasks.push(() => trial(variant, [n], state));
      // Killed again while recovering, at a point that moves along with the first.
      for (let n = 1; n <= points; n += 2) {
        tasks.push(() => trial(variant, [n, 1 + ((n * 7) % 24)], state));
      }
    }
    const started = Date.now();
    const results = await pool(tasks, CONCURRENCY);
    const failed = results.filter((r) => r.problems.length > 0);
    const doubled = results.reduce((sum, r) => sum + r.doubled, 0);
    const unknown = results.filter((r) => r.unknown > 0).length;
    const points = [...references.values()].map((r) => r.points).join('+');
    console.log(
      `durable kill trials: ${results.length} trials (${processes} processes), kill points ${points} (sync+async), ${unknown} with a Send of unknown outcome, doubled: ${doubled}, failed: ${failed.length}, ${Date.now() - started} ms`,
    );
    expect(failed.slice(0, 5)).toEqual([]);
    expect(doubled).toBe(0);
    expect(results.length).toBeGreaterThanOrEqual(200);
  }, 180_000);
});
