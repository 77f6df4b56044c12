import { Redis } from 'ioredis';
import { AgentMessage, type LagentMessageJSON } from 'lagent-ts';
import { RedisStore } from 'lagent-ts/stores';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobFence, RedisJobSessions } from '#src/stores/redis-job-sessions';
import { type RedisServer, startRedis } from '../distributed/queue/redis-server';

/*
 * RedisStore's sessions changed by BullMQ jobs: the job's lock fences every change, and a job commits once,
 * writing its reply marker and marking its hash in the same script. The lock, hash and markers are plain
 * keys here, set as BullMQ would.
 */

let server: RedisServer;
let admin: Redis;
let store: RedisStore;
let counter = 0;

beforeAll(async () => {
  server = await startRedis();
  admin = new Redis(server.port, '127.0.0.1');
  store = new RedisStore({ url: server.url, prefix: 'jobs' });
});
afterAll(async () => {
  await store?.close();
  admin?.disconnect();
  await server?.close();
});

const message = (content: string): LagentMessageJSON =>
  new AgentMessage({ sender: 'user', content }).toJSON({ format: 'lagent' });

/** A job of its own: its keys, its lock held by `token`. */
async function job(token = 'token-1'): Promise<{ fence: JobFence; cancel: string }> {
  const id = `job${++counter}`;
  const fence = { done: `q:done:${id}`, job: `q:${id}`, lock: `q:${id}:lock`, token };
  await admin.hset(fence.job, 'name', 'call');
  await admin.set(fence.lock, token);
  return { fence, cancel: `q:cancel:${id}` };
}

const append = (content: string) => ({
  kind: 'append' as const,
  payload: JSON.stringify({ memory: [message(content)] }),
});

describe('RedisJobSessions', () => {
  it('commits a job once: its reply marker and its hash mark in the same script, then the reply to any retry', async () => {
    const sessions = new RedisJobSessions(store, 'ns');
    const { fence, cancel } = await job();
    const acquired = await sessions.acquire('s', { owner: 'w1', leaseMs: 5_000, fence, cancel });
    expect(acquired).toMatchObject({ status: 'ok', version: 0, epoch: '', loaded: { state: {} } });
    const commit = {
      owner: 'w1',
      version: 0,
      change: append('a'),
      fence,
      reply: '"r1"',
      replyTtlSeconds: 60,
    };
    const committed = await sessions.commit('s', commit);
    expect(committed).toMatchObject({ status: 'ok', version: 1 });
    expect(await admin.get(fence.done)).toBe('"r1"');
    expect(await admin.hget(fence.job, 'lagentCommitted')).toBe('1');
    // The lease went with the commit; a plain store reads the turn.
    expect(await admin.exists(store.keys.lease('ns', 's'))).toBe(0);
    expect((await store.readSession('ns', 's'))?.state).toEqual({ memory: [message('a')] });
    // A retry of the job answers with the reply, and commits nothing.
    expect(await sessions.acquire('s', { owner: 'w2', leaseMs: 5_000, fence, cancel })).toEqual({
      status: 'done',
      reply: '"r1"',
    });
    expect(await sessions.commit('s', { ...commit, owner: 'w2', version: 1 })).toEqual({
      status: 'done',
      reply: '"r1"',
    });
    // Its reply collected, the job's hash still says it was committed.
    await admin.del(fence.done);
    expect(await sessions.acquire('s', { owner: 'w2', leaseMs: 5_000, fence, cancel })).toEqual({
      status: 'committed',
    });
    expect((await store.readSession('ns', 's'))?.version).toBe(1);
  });

  it('changes nothing for a worker whose job lock holds another token (stale), even holding the lease', async () => {
    const sessions = new RedisJobSessions(store, 'ns');
    const { fence, cancel } = await job();
    const acquired = await sessions.acquire('stale', { owner: 'w1', leaseMs: 5_000, fence, cancel });
    expect(acquired.status).toBe('ok');
    expect(await sessions.renew('stale', 'w1', 5_000, fence)).toBe(true);
    // BullMQ gave the job to another worker (this one stalled past its lock).
    await admin.set(fence.lock, 'token-2');
    expect(await sessions.renew('stale', 'w1', 5_000, fence)).toBe(false);
    const commit = { owner: 'w1', version: 0, change: append('x'), fence, reply: '"x"', replyTtlSeconds: 60 };
    expect(await sessions.commit('stale', commit)).toEqual({ status: 'stale' });
    expect(await store.readSession('ns', 'stale')).toBeUndefined();
    expect(await admin.exists(fence.done)).toBe(0);
    expect(await admin.hget(fence.job, 'lagentCommitted')).toBeNull();
    expect(await sessions.acquire('stale', { owner: 'w1', leaseMs: 5_000, fence, cancel })).toEqual({
      status: 'stale',
    });
    // The new holder of the lock commits.
    const mine = { ...fence, token: 'token-2' };
    expect(
      (await sessions.acquire('stale', { owner: 'w2', leaseMs: 5_000, fence: mine, cancel })).status,
    ).toBe('ok');
    expect(await sessions.commit('stale', { ...commit, owner: 'w2', fence: mine })).toMatchObject({
      status: 'ok',
      version: 1,
    });
  });

  it('waits for a lease another owner holds (an agent with the store too), refuses a moved version, and skips a cancelled job', async () => {
    const sessions = new RedisJobSessions(store, 'ns');
    const agentLease = await store.acquireSession('ns', 'shared', { owner: 'agent', leaseMs: 5_000 });
    expect(agentLease.acquired).toBe(true);
    const { fence, cancel } = await job();
    const busy = await sessions.acquire('shared', { owner: 'w1', leaseMs: 5_000, fence, cancel });
    expect(busy.status).toBe('busy');
    expect((busy as { retryInMs: number }).retryInMs).toBeGreaterThan(4_000);
    await store.commitTurn('ns', 'shared', {
      owner: 'agent',
      version: 0,
      turn: { append: { memory: [message('agent')] } },
    });
    const acquired = await sessions.acquire('shared', { owner: 'w1', leaseMs: 5_000, fence, cancel });
    expect(acquired).toMatchObject({
      status: 'ok',
      version: 1,
      loaded: { state: { memory: [message('agent')] } },
    });
    // Known (epoch, version): the state is not sent again.
    const { epoch } = acquired as { epoch: string };
    const known = await sessions.acquire('shared', {
      owner: 'w1',
      leaseMs: 5_000,
      fence,
      cancel,
      known: { epoch, version: 1 },
    });
    expect(known).toEqual({ status: 'ok', version: 1, epoch, loaded: undefined });
    const commit = {
      owner: 'w1',
      version: 0,
      change: append('late'),
      fence,
      reply: '"r"',
      replyTtlSeconds: 60,
    };
    expect(await sessions.commit('shared', commit)).toEqual({ status: 'conflict' });
    expect(await admin.exists(store.keys.lease('ns', 'shared'))).toBe(0);
    const other = await job();
    await admin.set(other.cancel, '1');
    expect(await sessions.acquire('shared', { owner: 'w3', leaseMs: 5_000, ...other })).toEqual({
      status: 'cancelled',
    });
  });
});
