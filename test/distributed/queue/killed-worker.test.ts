import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { AsyncAgent } from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker, RemoteAgentError } from 'lagent-ts/distributed/queue';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, sessionKeys, startRedis } from './redis-server';

const script = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));
let redis: RedisServer;
let admin: Redis;
const children: ChildProcess[] = [];
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
  await Promise.all(open.splice(0).map((item) => item.close()));
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.close();
});

/** Starts the worker script in its own process and resolves once it takes jobs. */
async function spawnWorker(queue: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, REDIS_URL: redis.url, QUEUE: queue, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk;
      if (output.includes('ready')) resolve();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.once('exit', (code) => reject(new Error(`worker process exited (${code}): ${output}`)));
  });
  return child;
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

function localWorker(queue: string, prefix: string) {
  const worker = new QueueAgentWorker({
    agent: new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => `${prefix}:${messages.at(-1)?.content}#${messages.length}`,
      }),
    }),
    queue,
    connection: redis.url,
    lockDuration: 1_000,
    stalledInterval: 500,
  });
  open.push(worker);
  return worker;
}

/** Resolves once `check` holds (the test's timeout ends a wait for something that never happens). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

const contents = (dict: Record<string, { content: unknown }[]>) =>
  dict.memory!.map((message) => message.content);

describe('a worker killed with SIGKILL', () => {
  it('mid-call leaves the session as before the call; the job completes on another worker, once', async () => {
    const queue = 'killed-mid-call';
    const remote = new AsyncQueueAgent({ queue, connection: redis.url });
    open.push(remote);
    const first = localWorker(queue, 'fast');
    await first.ready();
    await remote.call('first', { sessionId: 's' });
    await first.close();

    const doomed = await spawnWorker(queue);
    const call = remote.call('second', { sessionId: 's' });
    // The doomed worker holds the session's lease: its model call is under way.
    await until(async () => (await admin.exists(sessionKeys(queue, 's').lease)) === 1);
    await kill(doomed);
    expect(contents(await remote.stateDict('s'))).toEqual(['first', 'fast:first#1']);
    expect(await admin.hget(sessionKeys(queue, 's').session, 'version')).toBe('1');

    // The job's lock (1 s) runs out and the stalled check (every 0.5 s) hands it to the rescuer.
    await localWorker(queue, 'rescue').ready();
    const reply = await call;
    // Run again from the session as it was: the model saw the first turn and the question, once.
    expect(reply.content).toBe('rescue:second#3');
    expect(contents(await remote.stateDict('s'))).toEqual([
      'first',
      'fast:first#1',
      'second',
      'rescue:second#3',
    ]);
    expect(await admin.hget(sessionKeys(queue, 's').session, 'version')).toBe('2');
  });

  it('after committing, before BullMQ heard of it: the job completes elsewhere with the committed reply, no turn doubled', async () => {
    const queue = 'killed-after-commit';
    const remote = new AsyncQueueAgent({ queue, connection: redis.url });
    open.push(remote);
    const doomed = await spawnWorker(queue, { SLOW_MS: '10', DIE_AFTER_COMMIT: '1' });
    const exited = new Promise((resolve) => doomed.once('exit', resolve));
    const call = remote.call('only once', { sessionId: 't' });
    await exited;
    // The turn is committed; the job is still active in BullMQ with a lock that will expire.
    expect(contents(await remote.stateDict('t'))).toEqual(['only once', 'slow:only once#1']);

    await localWorker(queue, 'rescue').ready();
    const reply = await call;
    expect(reply.content).toBe('slow:only once#1');
    expect(contents(await remote.stateDict('t'))).toEqual(['only once', 'slow:only once#1']);
    expect(await admin.hget(sessionKeys(queue, 't').session, 'version')).toBe('1');
    // BullMQ confirmed the job, so its commit marker is gone.
    await until(async () => (await admin.keys(`bull:${queue}:lagent:done:*`)).length === 0);
  });

  it('after committing, its reply marker gone: the job run elsewhere fails as committed, and commits nothing again', async () => {
    const queue = 'killed-after-commit-no-marker';
    const remote = new AsyncQueueAgent({ queue, connection: redis.url });
    open.push(remote);
    const doomed = await spawnWorker(queue, { SLOW_MS: '10', DIE_AFTER_COMMIT: '1' });
    const exited = new Promise((resolve) => doomed.once('exit', resolve));
    const call = remote.call('only once', { sessionId: 'u' });
    call.catch(() => {});
    await exited;
    // As if the marker had expired while the job waited for a worker.
    expect(await admin.del(...(await admin.keys(`bull:${queue}:lagent:done:*`)))).toBe(1);

    await localWorker(queue, 'rescue').ready();
    const error = (await call.catch((caught: unknown) => caught)) as RemoteAgentError;
    expect(error).toBeInstanceOf(RemoteAgentError);
    expect(error.remoteName).toBe('AlreadyCommittedError');
    expect(contents(await remote.stateDict('u'))).toEqual(['only once', 'slow:only once#1']);
    expect(await admin.hget(sessionKeys(queue, 'u').session, 'version')).toBe('1');
  });
});
