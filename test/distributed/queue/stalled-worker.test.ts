import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { AsyncAgent } from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker } from 'lagent-ts/distributed/queue';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, sessionKeys, startRedis } from './redis-server';

const script = fileURLToPath(new URL('./fixtures/stall-worker.ts', import.meta.url));
/** Jobs each stalled worker holds when it stalls: one trial each. */
const JOBS = 10;
const LOCK_MS = 400;

let redis: RedisServer;
let admin: Redis;
let dir: string;

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
  dir = mkdtempSync(join(tmpdir(), 'lagent-stall-'));
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.close();
  rmSync(dir, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A worker process, with what it printed so far. */
interface Child {
  process: ChildProcess;
  lines: string[];
}

async function spawnWorker(queue: string, env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      QUEUE: queue,
      CONCURRENCY: String(JOBS),
      LOCK_MS: String(LOCK_MS),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const state: Child = { process: child, lines: [] };
  let buffer = '';
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    errors += chunk;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      state.lines.push(...lines);
      if (lines.includes('ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker process exited (${code}): ${errors}`)));
  });
  return state;
}

async function end(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Resolves once `check` holds (the test's timeout ends a wait for something that never happens). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await pause(10);
}

/** What one round of trials found, per session: the turns stored, and the model calls each worker made. */
interface Trial {
  session: string;
  reply: string;
  stored: string[];
  version: string | null;
  /** Model calls the stalled worker started after the job was committed elsewhere and answered. */
  lateCalls: number;
  rescueCalls: number;
}

/**
 * One round: a worker process takes JOBS calls (one per session) and stalls while its model calls are under
 * way, past its lock; a worker in this process takes the jobs over and commits them, the callers get their
 * replies (and drop the done markers); then the stalled worker wakes up and carries on as it will.
 */
async function round(name: string, stall: 'SIGSTOP' | 'busy'): Promise<Trial[]> {
  const queue = `stall-${name}`;
  const flag = join(dir, name);
  const child = await spawnWorker(queue, stall === 'busy' ? { BUSY_FLAG: flag, LATENCY_MS: '200' } : {});
  const rescued: string[] = [];
  const rescuer = new QueueAgentWorker({
    agent: new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          const question = String(messages.at(-1)?.content);
          rescued.push(question);
          return `rescued:${question}#${messages.length}`;
        },
      }),
    }),
    queue,
    connection: redis.url,
    concurrency: JOBS,
    lockDuration: LOCK_MS,
    stalledInterval: 200,
    maxStalledCount: 10,
  });
  const remote = new AsyncQueueAgent({ queue, connection: redis.url, timeout: 30_000 });
  try {
    const sessions = Array.from({ length: JOBS }, (_, i) => `${name}-${i}`);
    const calls = sessions.map((session) => remote.call(session, { sessionId: session }));
    const modelCalls = (question: string, from = 0) =>
      child.lines.slice(from).filter((line) => line === `llm ${question}`).length;
    // Every job is in the worker process's hands, its model call under way.
    await until(() => sessions.every((session) => modelCalls(session) > 0));
    if (stall === 'SIGSTOP') child.process.kill('SIGSTOP');
    await rescuer.ready();
    const replies = await Promise.all(calls);
    const answered = child.lines.length;
    // The stalled worker wakes up after the callers have their replies.
    if (stall === 'SIGSTOP') child.process.kill('SIGCONT');
    else writeFileSync(flag, '');
    // Let it do whatever it does then, to the end: asked to stop (SIGTERM), it finishes every call it holds,
    // tries to commit each (fenced), and says so.
    child.process.kill('SIGTERM');
    await until(() => child.lines.includes('closed'));
    return await Promise.all(
      sessions.map(async (session, i) => {
        const state = await remote.stateDict(session);
        return {
          session,
          reply: String(replies[i]!.content),
          stored: state.memory!.map((message) => String(message.content)),
          version: await admin.hget(sessionKeys(queue, session).session, 'version'),
          lateCalls: modelCalls(session, answered),
          rescueCalls: rescued.filter((question) => question === session).length,
        };
      }),
    );
  } finally {
    await end(child.process);
    await Promise.all([rescuer.close(), remote.close()]);
  }
}

/** Checks every trial: one turn stored, the caller's reply, and no model call started after the stall. */
function check(trials: Trial[]): { doubled: number; rescued: number } {
  let doubled = 0;
  let rescued = 0;
  for (const trial of trials) {
    if (trial.stored.length !== 2 || trial.version !== '1' || trial.lateCalls > 0) doubled++;
    if (trial.rescueCalls > 0) rescued++;
  }
  return { doubled, rescued };
}

describe('a worker that stalls past its lock', () => {
  it(`never commits a turn twice nor runs it again, when paused (SIGSTOP) or its event loop blocked: ${6 * JOBS} trials`, async () => {
    const rounds = await Promise.all([
      round('stop-a', 'SIGSTOP'),
      round('stop-b', 'SIGSTOP'),
      round('stop-c', 'SIGSTOP'),
      round('busy-a', 'busy'),
      round('busy-b', 'busy'),
      round('busy-c', 'busy'),
    ]);
    const trials = rounds.flat();
    const { doubled, rescued } = check(trials);
    const stopped = check(rounds.slice(0, 3).flat());
    console.log(
      `stalled-worker trials: ${trials.length} (SIGSTOP ${3 * JOBS}, busy loop ${3 * JOBS}), taken over: ${rescued}, ` +
        `doubled: ${doubled} (SIGSTOP ${stopped.doubled}, busy loop ${doubled - stopped.doubled})`,
    );
    // The stalls did what they should: another worker took (nearly all) the jobs over and committed them.
    expect(rescued).toBeGreaterThanOrEqual(50);
    for (const trial of trials) {
      expect({ session: trial.session, stored: trial.stored, version: trial.version }).toEqual({
        session: trial.session,
        stored: [trial.session, trial.reply],
        version: '1',
      });
      // The stalled worker never called its model again for a job it had lost.
      expect(trial.lateCalls).toBe(0);
    }
    expect(doubled).toBe(0);
  }, 60_000);
});
