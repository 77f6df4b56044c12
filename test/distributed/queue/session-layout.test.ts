import { Redis } from 'ioredis';
import { type AgentMessage, AsyncAgent } from 'lagent-ts';
import {
  AsyncQueueAgent,
  QueueAgentWorker,
  type QueueHostedAgent,
  RemoteAgentError,
} from 'lagent-ts/distributed/queue';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, sessionKeys, startRedis } from './redis-server';

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

const nextQueue = () => `layout${++queueCount}`;

/** The reply names the question's start and how many messages the model saw; `pad` makes it that long. */
function counting(pad = '') {
  return new AsyncMockLLM({
    responses: (messages) => `${String(messages.at(-1)?.content).slice(0, 12)}#${messages.length}${pad}`,
  });
}

function worker(queue: string, options: Partial<ConstructorParameters<typeof QueueAgentWorker>[0]> = {}) {
  const created = new QueueAgentWorker({
    agent: new AsyncAgent({ llm: counting() }),
    queue,
    connection: redis.url,
    ...options,
  });
  open.push(created);
  return created;
}

function client(queue: string) {
  const created = new AsyncQueueAgent({ queue, connection: redis.url });
  open.push(created);
  return created;
}

const contents = (dict: Record<string, { content: unknown }[]>) =>
  dict.memory!.map((message) => String(message.content).slice(0, 20));

/** Bytes Redis has received so far. */
async function received(): Promise<number> {
  return Number(/total_net_input_bytes:(\d+)/.exec(await admin.info('stats'))![1]);
}

describe('a session in Redis, turn after turn', () => {
  it('writes each turn, not the whole history: bytes per call bounded by the turn, flat as the history grows (2 MB turns, 12 turns)', async () => {
    const queue = nextQueue();
    const half = 1_000_000;
    // Each turn: a 1 MB question and a 1 MB reply.
    await worker(queue, { agent: new AsyncAgent({ llm: counting('r'.repeat(half)) }) }).ready();
    const uncached = nextQueue();
    await worker(uncached, {
      agent: new AsyncAgent({ llm: counting('r'.repeat(half)) }),
      sessionCacheSize: 0,
    }).ready();
    const remote = client(queue);
    const remoteUncached = client(uncached);
    const turns = 12;
    const ms: number[] = [];
    const bytes: number[] = [];
    const bytesUncached: number[] = [];
    for (let turn = 1; turn <= turns; turn++) {
      const question = `q${turn}:`.padEnd(half, 'q');
      let before = await received();
      const started = performance.now();
      const reply = await remote.call(question, { sessionId: 'big' });
      ms.push(performance.now() - started);
      bytes.push((await received()) - before);
      expect(String(reply.content).startsWith(`${question.slice(0, 12)}#${2 * turn - 1}r`)).toBe(true);
      before = await received();
      await remoteUncached.call(question, { sessionId: 'big' });
      bytesUncached.push((await received()) - before);
    }
    console.log(
      `2 MB turns: ms per call ${ms.map((value) => value.toFixed(0)).join(' ')}; ` +
        `MB received per call ${bytes.map((value) => (value / 1e6).toFixed(1)).join(' ')} ` +
        `(without the worker's cache ${bytesUncached.map((value) => (value / 1e6).toFixed(1)).join(' ')})`,
    );
    // A call sends its question (job), its turn and reply (commit) and its reply (completion): about 5 MB for
    // a 2 MB turn, whatever the history's length (rewriting it would add 2 MB per turn: 27 MB at turn 12).
    for (const sent of [...bytes.slice(1), ...bytesUncached.slice(1)])
      expect(sent).toBeLessThan(3 * 2 * half);
    expect(bytes.at(-1)!).toBeLessThan(1.5 * bytes[1]!);
    expect(bytesUncached.at(-1)!).toBeLessThan(1.5 * bytesUncached[1]!);
    // (The time per call is printed above, a figure to read, not a bound: a busy machine stretches it; the bytes
    // are what show that a call's work does not grow with the history.)
    // Both hold the whole history.
    const memory = contents(await remote.stateDict('big'));
    expect(memory).toHaveLength(2 * turns);
    expect(contents(await remoteUncached.stateDict('big'))).toEqual(memory);
    expect(await admin.llen(sessionKeys(queue, 'big').turns)).toBe(turns - 1);
  }, 60_000);

  it('continues a session stored whole (as before turns were appended), and reads it the same', async () => {
    const queue = nextQueue();
    const message = (content: string, sender: string) => ({
      content,
      sender,
      formatted: null,
      extra_info: null,
      type: null,
      receiver: null,
      stream_state: 0,
    });
    const old = { memory: [message('old question', 'user'), message('old answer', 'AsyncAgent')] };
    await admin.hset(`bull:${queue}:lagent:session:legacy`, 'version', '1', 'state', JSON.stringify(old));
    const remote = client(queue);
    expect(await remote.stateDict('legacy')).toEqual(old);
    await worker(queue).ready();
    expect((await remote.call('new question', { sessionId: 'legacy' })).content).toBe('new question#3');
    expect(contents(await remote.stateDict('legacy'))).toEqual([
      'old question',
      'old answer',
      'new question',
      'new question#3',
    ]);
    // Moved to RedisStore's keys on first touch: the old record is the base, the new turn appended after it.
    const moved = sessionKeys(queue, 'legacy');
    expect(JSON.parse((await admin.hget(moved.session, 'state'))!)).toEqual(old);
    expect(await admin.llen(moved.turns)).toBe(1);
    expect(await admin.hget(moved.session, 'version')).toBe('2');
    expect(await admin.exists(`bull:${queue}:lagent:session:legacy`)).toBe(0);
    await remote.reset('legacy');
    expect(await remote.stateDict('legacy')).toEqual({ memory: [] });
    expect(await admin.exists(moved.turns)).toBe(0);
    expect((await remote.call('fresh', { sessionId: 'legacy' })).content).toBe('fresh#1');
  });

  it('writes the state whole when a turn changes earlier messages, and appends again after', async () => {
    const queue = nextQueue();
    const inner = new AsyncAgent({ llm: counting() });
    // Forgets the oldest turn after answering a question that asks it to.
    const forgetful = {
      name: 'forgetful',
      stateDict: (...args: Parameters<AsyncAgent['stateDict']>) => inner.stateDict(...args),
      loadStateDict: (...args: Parameters<AsyncAgent['loadStateDict']>) => inner.loadStateDict(...args),
      reset: (...args: Parameters<AsyncAgent['reset']>) => inner.reset(...args),
      async call(...args: Parameters<AsyncAgent['call']>) {
        const reply = await inner.call(...args);
        const [question] = args[0] as AgentMessage[];
        if (String(question?.content).startsWith('forget'))
          inner.memory!.get(args[1]?.sessionId)!.delete([0, 1]);
        return reply;
      },
    } as unknown as QueueHostedAgent;
    await worker(queue, { agent: forgetful }).ready();
    const remote = client(queue);
    const turnsKey = sessionKeys(queue, 'f').turns;
    await remote.call('one', { sessionId: 'f' });
    await remote.call('two', { sessionId: 'f' });
    expect(await admin.llen(turnsKey)).toBe(1);
    await remote.call('forget', { sessionId: 'f' });
    expect(contents(await remote.stateDict('f'))).toEqual(['two', 'two#3', 'forget', 'forget#5']);
    expect(await admin.exists(turnsKey)).toBe(0);
    await remote.call('three', { sessionId: 'f' });
    expect(contents(await remote.stateDict('f'))).toEqual([
      'two',
      'two#3',
      'forget',
      'forget#5',
      'three',
      'three#5',
    ]);
    expect(await admin.llen(turnsKey)).toBe(1);
  });

  it('never uses a kept state that is not the stored one (the record was replaced, even at the same version)', async () => {
    const queue = nextQueue();
    await worker(queue).ready();
    const remote = client(queue);
    await remote.call('kept here', { sessionId: 'k' });
    // The record is replaced behind the worker's back, at the version the worker kept.
    const replaced = {
      memory: (await remote.stateDict('k')).memory!.map((m) => ({ ...m, content: `other ${m.content}` })),
    };
    const k = sessionKeys(queue, 'k');
    await admin.del(k.session, k.turns);
    await admin.hset(
      k.session,
      'version',
      '1',
      'base',
      '1',
      'state',
      JSON.stringify(replaced),
      'expires',
      '',
    );
    await admin.hset(k.session, 'epoch', 'another', 'updated', '0');
    expect((await remote.call('next', { sessionId: 'k' })).content).toBe('next#3');
    expect(contents(await remote.stateDict('k'))).toEqual([
      'other kept here',
      'other kept here#1',
      'next',
      'next#3',
    ]);
    // Two workers taking turns on one session each read what the other committed.
    await worker(queue).ready();
    await Promise.all(Array.from({ length: 8 }, (_, i) => remote.call(`m${i}`, { sessionId: 'k' })));
    const memory = contents(await remote.stateDict('k'));
    expect(memory).toHaveLength(20);
    for (let turn = 0; turn < 10; turn++)
      expect(memory[2 * turn + 1]).toBe(`${memory[2 * turn]}#${2 * turn + 1}`);
  });

  it('an agent that changes the loaded state in place fails the call, and the session stays as it was', async () => {
    const queue = nextQueue();
    const inner = new AsyncAgent({ llm: counting() });
    const meddling = {
      name: 'meddling',
      stateDict: (...args: Parameters<AsyncAgent['stateDict']>) => inner.stateDict(...args),
      loadStateDict(dict: Record<string, { content: unknown }[]>, sessionId: string) {
        dict.memory![0]!.content = 'rewritten in place';
        inner.loadStateDict(dict as never, sessionId);
      },
      reset: (...args: Parameters<AsyncAgent['reset']>) => inner.reset(...args),
      call: (...args: Parameters<AsyncAgent['call']>) => inner.call(...args),
    } as unknown as QueueHostedAgent;
    await worker(queue, { agent: meddling }).ready();
    const remote = client(queue);
    await remote.call('first', { sessionId: 'm' });
    const error = await remote.call('second', { sessionId: 'm' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RemoteAgentError);
    expect((error as RemoteAgentError).remoteName).toBe('TypeError');
    expect(contents(await remote.stateDict('m'))).toEqual(['first', 'first#1']);
  });

  it('refuses a bad sessionCacheSize', () => {
    const agent = new AsyncAgent({ llm: counting() });
    for (const sessionCacheSize of [-1, 1.5, Number.NaN]) {
      expect(() => new QueueAgentWorker({ agent, connection: redis.url, sessionCacheSize })).toThrow(
        /sessionCacheSize/,
      );
    }
  });
});
