import { Redis } from 'ioredis';
import {
  AgentMessage,
  AgentStatusCode,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncStreamingAgent,
  ConfigurationError,
  TimeoutError,
} from 'lagent-ts';
import {
  AsyncQueueAgent,
  QueueAgentWorker,
  QueueConnectionError,
  RemoteAgentError,
} from 'lagent-ts/distributed/queue';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HeldLLM } from '../../helpers/held';
import { freePort } from '../../helpers/processes';
import { type RedisServer, sessionKeys, startRedis } from './redis-server';

let redis: RedisServer;
let admin: Redis;
let queueCount = 0;
/** Everything a test starts, closed after it (workers and clients). */
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

/** A fresh queue name per test, so tests never see each other's jobs or sessions. */
const nextQueue = () => `q${++queueCount}`;

/** The reply names the question and how many messages the model saw: turn k sees 2k - 1. */
function counting(options: { latencyMs?: number } = {}) {
  return new AsyncMockLLM({
    responses: (messages) => `${messages.at(-1)?.content}#${messages.length}`,
    ...options,
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

function client(queue: string, options: { timeout?: number } = {}) {
  const created = new AsyncQueueAgent({ queue, connection: redis.url, ...options });
  open.push(created);
  return created;
}

const contents = (dict: Record<string, { content: unknown }[]>, key = 'memory') =>
  dict[key]!.map((message) => message.content);

describe('QueueAgentWorker and AsyncQueueAgent', () => {
  it('runs a call as a job and keeps the session in Redis, in Python Lagent’s state-dict shape', async () => {
    const queue = nextQueue();
    await worker(queue).ready();
    const remote = client(queue);
    const first = await remote.call('hello', { sessionId: 'alice' });
    expect(first).toBeInstanceOf(AgentMessage);
    expect(first.content).toBe('hello#1');
    expect((await remote.call('again', { sessionId: 'alice' })).content).toBe('again#3');

    // The same calls on a local agent give the same state dict, byte for byte in Redis.
    const local = new AsyncAgent({ llm: counting() });
    await local.call('hello', { sessionId: 'alice' });
    await local.call('again', { sessionId: 'alice' });
    const expected = local.stateDict('alice', { format: 'lagent' });
    expect(await remote.stateDict('alice', { format: 'lagent' })).toEqual(expected);
    expect(await remote.stateDict('alice')).toEqual(expected);
    expect(await remote.stateDict('alice', { format: 'lagent-ts' })).toEqual(local.stateDict('alice'));
    // In Redis: the first turn as the base, the second appended as its own messages.
    const stored = await admin.hgetall(sessionKeys(queue, 'alice').session);
    expect(stored.version).toBe('2');
    expect(JSON.parse(stored.state!)).toEqual({ memory: expected.memory!.slice(0, 2) });
    const turns = await admin.lrange(sessionKeys(queue, 'alice').turns, 0, -1);
    expect(turns.map((turn) => JSON.parse(turn))).toEqual([{ memory: expected.memory!.slice(2) }]);
    expect(Object.keys(expected.memory![0]!).sort()).toEqual(
      ['content', 'extra_info', 'formatted', 'receiver', 'sender', 'stream_state', 'type'].sort(),
    );
    // ioredis options work as well as a URL.
    const byOptions = new AsyncQueueAgent({ queue, connection: { host: '127.0.0.1', port: redis.port } });
    open.push(byOptions);
    expect(contents(await byOptions.stateDict('alice'))).toEqual(['hello', 'hello#1', 'again', 'again#3']);
    // An unknown session has the served agent's keys, empty.
    expect(await remote.stateDict('nobody')).toEqual({ memory: [] });
  });

  it('serves interleaved sessions from two workers, each session’s calls one at a time and in order', async () => {
    const queue = nextQueue();
    const ran: string[] = [];
    const make = (name: string) => {
      const agent = new AsyncAgent({ llm: counting({ latencyMs: 5 }) });
      agent.events.on('callStart', ({ sessionId }) => ran.push(`${name}:${String(sessionId)}`));
      return worker(queue, { agent, concurrency: 4 });
    };
    await Promise.all([make('a').ready(), make('b').ready()]);
    const remote = client(queue);
    const sessions = ['s1', 's2', 's3', 's4', 's5', 's6'];
    const turns = 5;
    const replies = await Promise.all(
      sessions.flatMap((sessionId) =>
        Array.from({ length: turns }, (_, i) => remote.call(`${sessionId}-q${i}`, { sessionId })),
      ),
    );
    // Each call's model saw exactly the turns before it: one at a time, in call order.
    replies.forEach((reply, index) => {
      const turn = index % turns;
      expect(reply.content).toBe(`${sessions[Math.floor(index / turns)]}-q${turn}#${2 * turn + 1}`);
    });
    for (const sessionId of sessions) {
      const memory = contents(await remote.stateDict(sessionId));
      expect(memory).toEqual(
        Array.from({ length: turns }, (_, i) => [
          `${sessionId}-q${i}`,
          `${sessionId}-q${i}#${2 * i + 1}`,
        ]).flat(),
      );
    }
    // Both workers took part.
    expect(new Set(ran.map((entry) => entry.split(':')[0]))).toEqual(new Set(['a', 'b']));
  });

  it('runs calls of two clients on one session one at a time: no turn lost, doubled or interleaved', async () => {
    const queue = nextQueue();
    await Promise.all([
      worker(queue, { agent: new AsyncAgent({ llm: counting({ latencyMs: 3 }) }), concurrency: 3 }).ready(),
      worker(queue, { agent: new AsyncAgent({ llm: counting({ latencyMs: 3 }) }), concurrency: 3 }).ready(),
    ]);
    const [one, two] = [client(queue), client(queue)];
    const calls = Array.from({ length: 12 }, (_, i) =>
      (i % 2 ? one : two).call(`m${i}`, { sessionId: 'shared' }),
    );
    await Promise.all(calls);
    const memory = contents(await one.stateDict('shared')) as string[];
    expect(memory).toHaveLength(24);
    for (let turn = 0; turn < 12; turn++) {
      const question = memory[2 * turn]!;
      // The reply follows its own question and saw every turn before it.
      expect(memory[2 * turn + 1]).toBe(`${question}#${2 * turn + 1}`);
    }
    expect(new Set(memory.filter((_, i) => i % 2 === 0))).toEqual(
      new Set(Array.from({ length: 12 }, (_, i) => `m${i}`)),
    );
  });

  it('keeps a served composite’s whole tree per session, and a failed call commits none of it', async () => {
    const queue = nextQueue();
    let criticFails = false;
    const make = () => {
      class Pair extends AsyncAgent {
        writer = new AsyncAgent({ llm: counting(), name: 'writer' });
        critic = new AsyncAgent({
          llm: new AsyncMockLLM({
            responses: (messages) => {
              if (criticFails) throw new Error('critic down');
              return `ok(${messages.at(-1)?.content})`;
            },
          }),
          name: 'critic',
        });
        override async forward(messages: AgentMessage[], options: AsyncForwardOptions) {
          const draft = await this.writer.call(messages, { sessionId: options.sessionId });
          return (await this.critic.call(draft, { sessionId: options.sessionId })).content as string;
        }
      }
      return new Pair({ name: 'pair' });
    };
    await Promise.all([worker(queue, { agent: make() }).ready(), worker(queue, { agent: make() }).ready()]);
    const remote = client(queue);
    await remote.call('one', { sessionId: 'tree' });
    await remote.call('two', { sessionId: 'tree' });
    const before = await remote.stateDict('tree');
    expect(Object.keys(before)).toEqual(['memory', 'writer.memory', 'critic.memory']);
    expect(contents(before, 'writer.memory')).toEqual(['one', 'one#1', 'two', 'two#3']);
    expect(contents(before, 'critic.memory')).toEqual(['one#1', 'ok(one#1)', 'two#3', 'ok(two#3)']);
    criticFails = true;
    await expect(remote.call('three', { sessionId: 'tree' })).rejects.toBeInstanceOf(RemoteAgentError);
    expect(await remote.stateDict('tree')).toEqual(before);
  });

  it('hosts a streaming agent: its final message is the reply', async () => {
    const queue = nextQueue();
    await worker(queue, { agent: new AsyncStreamingAgent({ llm: counting() }) }).ready();
    const remote = client(queue);
    const reply = await remote.call('stream me', { sessionId: 9 });
    expect(reply.content).toBe('stream me#1');
    expect(reply.streamState).toBe(AgentStatusCode.END);
    expect(contents(await remote.stateDict(9))).toEqual(['stream me', 'stream me#1']);
  });

  it('is usable as a sub-agent of a local composite', async () => {
    const queue = nextQueue();
    await worker(queue, { agent: new AsyncAgent({ llm: counting(), name: 'writer' }) }).ready();
    class Editor extends AsyncAgent {
      writer = client(queue);
      override async forward(messages: AgentMessage[], options: AsyncForwardOptions) {
        const draft = await this.writer.call(messages, { sessionId: options.sessionId });
        return `edited(${draft.content})`;
      }
    }
    const editor = new Editor({ memory: null });
    const reply = await editor.call('topic', { sessionId: 7 });
    expect(reply.content).toBe('edited(topic#1)');
    expect(contents(await editor.writer.stateDict(7))).toEqual(['topic', 'topic#1']);
    // The remote memory is in Redis, not in the local tree (as with Python Lagent's remote clients).
    expect(editor.stateDict(7)).toEqual({});
    expect(editor.children()).toEqual([]);
  });

  it('an aborted call removes its job when no worker took it, and it never runs', async () => {
    const queue = nextQueue();
    const remote = client(queue);
    const controller = new AbortController();
    const pending = remote.call('never', { sessionId: 1, signal: controller.signal });
    await expect.poll(() => admin.llen(`bull:${queue}:wait`)).toBe(1);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(await admin.llen(`bull:${queue}:wait`)).toBe(0);
    // A worker started afterwards finds nothing to run.
    await worker(queue).ready();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(contents(await remote.stateDict(1))).toEqual([]);
  });

  it('aborting the outer call of a composite stops the remote call while it runs; the session stays as it was', async () => {
    const queue = nextQueue();
    // The model never answers: only the caller's cancel stops the worker's call.
    const llm = new HeldLLM({ responses: (messages) => `${messages.at(-1)?.content}` });
    const served = new AsyncAgent({ llm });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    served.events.on('llmStart', () => started());
    let failed: unknown;
    served.events.on('error', ({ error }) => {
      failed = error;
    });
    await worker(queue, { agent: served }).ready();
    class Outer extends AsyncAgent {
      remote = client(queue);
      override async forward(messages: AgentMessage[], options: AsyncForwardOptions) {
        return (await this.remote.call(messages, { sessionId: options.sessionId })).content as string;
      }
    }
    const outer = new Outer({ memory: null });
    const controller = new AbortController();
    const call = outer.call('slow', { sessionId: 2, signal: controller.signal });
    await running;
    controller.abort(new Error('user left'));
    await expect(call).rejects.toThrow('user left');
    // The worker's model call was stopped by the caller's cancel.
    await expect.poll(() => failed).toBeDefined();
    expect(llm.held.pending).toBe(0);
    expect(contents(await outer.remote.stateDict(2))).toEqual([]);
  });

  it('an aborted call whose job waits for the session behind another call does not run', async () => {
    const queue = nextQueue();
    await worker(queue, {
      agent: new AsyncAgent({ llm: counting({ latencyMs: 300 }) }),
      concurrency: 2,
    }).ready();
    const [first, second] = [client(queue), client(queue)];
    const running = first.call('first', { sessionId: 'busy' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const controller = new AbortController();
    const waiting = second.call('second', { sessionId: 'busy', signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort(new Error('not any more'));
    await expect(waiting).rejects.toThrow('not any more');
    expect((await running).content).toBe('first#1');
    // Had it run after the first call, it would have committed by now.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(contents(await first.stateDict('busy'))).toEqual(['first', 'first#1']);
  });

  it('a call whose session lease was taken from it stops, and runs again once the session is free', async () => {
    const queue = nextQueue();
    const llm = counting({ latencyMs: 1_000 });
    const served = new AsyncAgent({ llm });
    const errors: string[] = [];
    served.events.on('error', ({ error }) => errors.push((error as Error).name));
    await worker(queue, { agent: served, lockDuration: 400 }).ready();
    const remote = client(queue);
    const call = remote.call('once', { sessionId: 'stolen' });
    const lease = sessionKeys(queue, 'stolen').lease;
    while ((await admin.exists(lease)) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    // As if this worker had stalled past its lease and another call took the session.
    await admin.set(lease, 'another-call', 'PX', 700);
    expect((await call).content).toBe('once#1');
    expect(errors).toEqual(['LeaseLostError']);
    expect(llm.calls).toHaveLength(2);
    expect(contents(await remote.stateDict('stolen'))).toEqual(['once', 'once#1']);
  });

  it('a timeout rejects with TimeoutError and removes a job no worker took', async () => {
    const queue = nextQueue();
    const remote = client(queue, { timeout: 100 });
    const error = await remote.call('late', { sessionId: 3 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeoutMs).toBe(100);
    expect(await admin.llen(`bull:${queue}:wait`)).toBe(0);
    // Per call, too.
    await expect(remote.call('late', { sessionId: 3, timeout: 50 })).rejects.toBeInstanceOf(TimeoutError);
  });

  it('a failing agent gives RemoteAgentError and leaves the session as it was', async () => {
    const queue = nextQueue();
    let fail = false;
    class ModelDown extends Error {
      override name = 'ModelDown';
    }
    const llm = new AsyncMockLLM({
      responses: (messages) => {
        if (fail) throw new ModelDown('model down');
        return `${messages.at(-1)?.content}#${messages.length}`;
      },
    });
    await worker(queue, { agent: new AsyncAgent({ llm }) }).ready();
    const remote = client(queue);
    await remote.call('ok', { sessionId: 4 });
    fail = true;
    const error = await remote.call('boom', { sessionId: 4 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RemoteAgentError);
    expect((error as RemoteAgentError).message).toContain('model down');
    expect((error as RemoteAgentError).remoteName).toBe('ModelDown');
    expect(contents(await remote.stateDict(4))).toEqual(['ok', 'ok#1']);
    fail = false;
    expect((await remote.call('next', { sessionId: 4 })).content).toBe('next#3');
  });

  it('passes the call’s options to the remote model, and keeps the caller’s own ones local', async () => {
    const queue = nextQueue();
    const llm = counting();
    await worker(queue, {
      agent: new AsyncAgent({ llm }),
      callerOptions: { generation: { temperature: true } },
    }).ready();
    const remote = client(queue);
    await remote.call('warm', {
      sessionId: 8,
      temperature: 0.25,
      timeout: 5_000,
      signal: new AbortController().signal,
    });
    expect(llm.calls[0]!.params.temperature).toBe(0.25);
  });

  it('refuses bad options at construction', () => {
    const agent = new AsyncAgent({ llm: counting() });
    expect(() => new QueueAgentWorker({ agent, connection: redis.url, concurrency: 0 })).toThrow(
      ConfigurationError,
    );
    expect(() => new QueueAgentWorker({ agent, connection: 'http://x', queue: 'a' })).toThrow(/redis:\/\//);
    expect(() => new QueueAgentWorker({ agent, connection: redis.url, queue: 'a:b' })).toThrow(
      ConfigurationError,
    );
    expect(() => new AsyncQueueAgent({ connection: redis.url, timeout: -1 })).toThrow(ConfigurationError);
  });

  it('runs up to `concurrency` calls at once on one worker', async () => {
    const queue = nextQueue();
    // The model answers only when released: the four calls are in it at once, and no fifth.
    const llm = new HeldLLM({ responses: (messages) => `${messages.at(-1)?.content}#${messages.length}` });
    await worker(queue, { agent: new AsyncAgent({ llm }), concurrency: 4 }).ready();
    const remote = client(queue);
    const calls = Promise.all([1, 2, 3, 4, 5].map((sessionId) => remote.call('hi', { sessionId })));
    await llm.held.until(4);
    await expect.poll(() => admin.llen(`bull:${queue}:wait`)).toBe(1);
    expect(llm.held.started).toBe(4);
    llm.held.release();
    await llm.held.until(1);
    llm.held.release();
    expect((await calls).map((reply) => reply.content)).toEqual(['hi#1', 'hi#1', 'hi#1', 'hi#1', 'hi#1']);
    expect(llm.held.started).toBe(5);
  });

  it('close() finishes the calls in progress, then stops', async () => {
    const queue = nextQueue();
    const served = new AsyncAgent({ llm: counting({ latencyMs: 300 }) });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    served.events.on('llmStart', () => started());
    const hosting = worker(queue, { agent: served });
    await hosting.ready();
    const remote = client(queue);
    const call = remote.call('finish me', { sessionId: 5 });
    await running;
    await hosting.close();
    expect((await call).content).toBe('finish me#1');
    expect(contents(await remote.stateDict(5))).toEqual(['finish me', 'finish me#1']);
  });

  it('says clearly when Redis cannot be reached', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const remote = new AsyncQueueAgent({ connection: url });
    const error = await remote.call('hi').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(QueueConnectionError);
    expect((error as Error).message).toMatch(/could not connect to Redis at 127\.0\.0\.1:\d+/);
    await remote.close();
    const hosting = new QueueAgentWorker({ agent: new AsyncAgent({ llm: counting() }), connection: url });
    await expect(hosting.ready()).rejects.toBeInstanceOf(QueueConnectionError);
    await hosting.close();
  });
});
