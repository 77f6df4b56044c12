import { Redis } from 'ioredis';
import { AsyncAgent } from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker } from 'lagent-ts/distributed/queue';
import { RedisStore } from 'lagent-ts/stores';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_COMPACT_AFTER } from '#src/stores/redis-store';
import { type RedisServer, sessionKeys, startRedis } from './redis-server';

/*
 * The queue's sessions are RedisStore's: an agent with `memory: { store }` and a queue worker continue each
 * other's sessions, and sessions of the queue's first layout are read and moved on first touch.
 */

let redis: RedisServer;
let admin: Redis;
let queueCount = 0;
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.close();
});

const nextQueue = () => `stores${++queueCount}`;

/** Replies with the question's text and how many messages the model saw. */
const counting = () =>
  new AsyncMockLLM({ responses: (messages) => `${String(messages.at(-1)?.content)}#${messages.length}` });

function track<T extends { close(): Promise<void> | void }>(item: T): T {
  open.push({ close: async () => item.close() });
  return item;
}

async function served(queue: string, options: { namespace?: string; storePrefix?: string } = {}) {
  const worker = track(
    new QueueAgentWorker({
      agent: new AsyncAgent({ llm: counting() }),
      queue,
      connection: redis.url,
      ...options,
    }),
  );
  await worker.ready();
  return track(new AsyncQueueAgent({ queue, connection: redis.url, ...options }));
}

const message = (content: string, sender: string) => ({
  content,
  sender,
  formatted: null,
  extra_info: null,
  type: null,
  receiver: null,
  stream_state: 0,
});

const contents = (state: Record<string, { content: unknown }[]> | undefined) =>
  state?.memory?.map((m) => String(m.content));

describe('the queue keeps its sessions in RedisStore', () => {
  it('a RedisStore reads what a queue worker committed, and an agent with the store continues it', async () => {
    const queue = nextQueue();
    const remote = await served(queue);
    await remote.call('one', { sessionId: 's' });
    await remote.call('two', { sessionId: 's' });
    const store = track(new RedisStore({ url: redis.url }));
    const read = await store.readSession(queue, 's');
    expect(read?.version).toBe(2);
    expect(contents(read?.state)).toEqual(['one', 'one#1', 'two', 'two#3']);
    expect((await store.listSessions(queue)).sessions.map((s) => s.sessionId)).toEqual(['s']);
    // An agent with the store (another process, say) continues the session, and the queue sees its turn.
    const agent = new AsyncAgent({ llm: counting(), memory: { store, namespace: queue } });
    expect((await agent.call('three', { sessionId: 's' })).content).toBe('three#5');
    expect((await remote.call('four', { sessionId: 's' })).content).toBe('four#7');
    expect(contents(await remote.stateDict('s'))).toEqual([
      'one',
      'one#1',
      'two',
      'two#3',
      'three',
      'three#5',
      'four',
      'four#7',
    ]);
    expect((await store.readSession(queue, 's'))?.version).toBe(4);
  });

  it('a queue worker continues a session an agent with the store began, and the agent sees its turns', async () => {
    const queue = nextQueue();
    const namespace = 'shared-app';
    const store = track(new RedisStore({ url: redis.url, prefix: 'app' }));
    const agent = new AsyncAgent({ llm: counting(), memory: { store, namespace } });
    await agent.call('local', { sessionId: 'u' });
    await agent.call('again', { sessionId: 'u' });
    const remote = await served(queue, { namespace, storePrefix: 'app' });
    expect((await remote.call('queued', { sessionId: 'u' })).content).toBe('queued#5');
    const read = await store.readSession(namespace, 'u');
    expect(contents(read?.state)).toEqual(['local', 'local#1', 'again', 'again#3', 'queued', 'queued#5']);
    // The agent holds version 2 in memory; it loads the queue's turn before its next call.
    expect((await agent.call('back', { sessionId: 'u' })).content).toBe('back#7');
    // Nothing of the session is under the queue's default namespace or BullMQ's prefix.
    expect(await admin.exists(sessionKeys(queue, 'u').session)).toBe(0);
    expect(await admin.keys(`bull:${queue}:lagent:session*`)).toEqual([]);
  });

  it('folds many appended turns into a new base, as RedisStore does', async () => {
    const queue = nextQueue();
    const remote = await served(queue);
    const calls = REDIS_COMPACT_AFTER + 8;
    for (let i = 0; i < calls; i++) await remote.call(`q${i}`, { sessionId: 'long' });
    const keys = sessionKeys(queue, 'long');
    expect(await admin.llen(keys.turns)).toBeLessThanOrEqual(REDIS_COMPACT_AFTER);
    expect(Number(await admin.hget(keys.session, 'base'))).toBeGreaterThan(1);
    const memory = contents(await remote.stateDict('long'))!;
    expect(memory).toHaveLength(2 * calls);
    memory.forEach((content, i) => {
      expect(content).toBe(i % 2 === 0 ? `q${i / 2}` : `q${(i - 1) / 2}#${i}`);
    });
  });

  it("moves a session of the queue's first layout (a base, appended turns, and versions without turns) on first touch", async () => {
    const queue = nextQueue();
    const old = `bull:${queue}:lagent`;
    const base = { memory: [message('a', 'user'), message('a#1', 'AsyncAgent')] };
    // Version 4: the base's turn, a turn that changed nothing, and two appended turns.
    await admin.hset(`${old}:session:m`, 'version', '4', 'state', JSON.stringify(base), 'epoch', 'old-epoch');
    await admin.rpush(
      `${old}:turns:m`,
      JSON.stringify({ memory: [message('b', 'user'), message('b#3', 'AsyncAgent')] }),
      JSON.stringify({ memory: [message('c', 'user'), message('c#5', 'AsyncAgent')] }),
    );
    // Another, reset in the old layout (state ''), and a third only a worker touches.
    await admin.hset(`${old}:session:r`, 'version', '3', 'state', '', 'epoch', 'e');
    await admin.hset(`${old}:session:w`, 'version', '1', 'state', JSON.stringify(base));
    const store = track(new RedisStore({ url: redis.url }));
    // A plain RedisStore does not know the queue's old keys: nothing there before the queue touches it.
    expect(await store.readSession(queue, 'm')).toBeUndefined();

    const remote = track(new AsyncQueueAgent({ queue, connection: redis.url }));
    expect(contents(await remote.stateDict('m'))).toEqual(['a', 'a#1', 'b', 'b#3', 'c', 'c#5']);
    // Moved: the old keys are gone, RedisStore's hold the same session at the same version.
    expect(await admin.exists(`${old}:session:m`, `${old}:turns:m`)).toBe(0);
    const moved = await admin.hgetall(sessionKeys(queue, 'm').session);
    expect(moved).toMatchObject({ version: '4', base: '2', epoch: 'old-epoch', migrated: 'queue-1' });
    expect(contents((await store.readSession(queue, 'm'))?.state)).toEqual([
      'a',
      'a#1',
      'b',
      'b#3',
      'c',
      'c#5',
    ]);

    const worker = track(
      new QueueAgentWorker({ agent: new AsyncAgent({ llm: counting() }), queue, connection: redis.url }),
    );
    await worker.ready();
    expect((await remote.call('d', { sessionId: 'm' })).content).toBe('d#7');
    expect((await store.readSession(queue, 'm'))?.version).toBe(5);
    // The reset one reads as empty and starts afresh; the untouched one is moved by the worker's call.
    expect(await remote.stateDict('r')).toEqual({ memory: [] });
    expect((await remote.call('fresh', { sessionId: 'r' })).content).toBe('fresh#1');
    expect((await store.readSession(queue, 'r'))?.version).toBe(4);
    expect((await remote.call('w2', { sessionId: 'w' })).content).toBe('w2#3');
    expect(await admin.exists(`${old}:session:w`)).toBe(0);
    expect(contents((await store.readSession(queue, 'w'))?.state)).toEqual(['a', 'a#1', 'w2', 'w2#3']);
    // A reset of a moved session empties it in RedisStore's keys.
    await remote.reset('m');
    expect(await remote.stateDict('m')).toEqual({ memory: [] });
    expect((await store.readSession(queue, 'm'))?.state).toEqual({});
  });

  it('refuses a bad namespace or store prefix', () => {
    const agent = new AsyncAgent({ llm: counting() });
    for (const bad of [{ namespace: '' }, { storePrefix: '' }, { namespace: 'x'.repeat(1025) }]) {
      expect(() => new QueueAgentWorker({ agent, connection: redis.url, ...bad })).toThrow(
        /namespace|storePrefix/,
      );
      expect(() => new AsyncQueueAgent({ connection: redis.url, ...bad })).toThrow(/namespace|storePrefix/);
    }
  });
});
