import {
  Agent,
  AgentMessage,
  AsyncAgent,
  type AsyncForwardOptions,
  ConfigurationError,
  MemoryStore,
  type SessionStore,
  StoreConflictError,
  StoreError,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';

/** Agents with `memory: { store }`: every committed turn is in the store, and only committed turns are. */

/** A model that answers `reply to <last message>`, after `latencyMs`. */
const echo = (latencyMs = 0) =>
  new AsyncMockLLM({
    responses: (messages) => `reply to ${String(messages.at(-1)?.content)}`,
    latencyMs,
  });

const contents = (store: MemoryStore, namespace: string, sessionId: string, key = 'memory') =>
  store.readSession(namespace, sessionId)?.state[key]?.map((message) => message.content);

/** An async view of a sync store: what RedisStore and PostgresStore look like to an agent. */
function asAsync(store: MemoryStore): SessionStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'synchronous') return false;
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as unknown as SessionStore;
}

/** An agent whose forward waits at a gate: `opened` gets the function that lets it answer. */
class Gated extends AsyncAgent {
  constructor(
    options: ConstructorParameters<typeof AsyncAgent>[0],
    readonly opened: (open: () => void) => void,
  ) {
    super(options);
  }
  override async forward(messages: AgentMessage[]): Promise<string> {
    await new Promise<void>((resolve) => this.opened(resolve));
    return `reply to ${String(messages.at(-1)?.content)}`;
  }
}

describe('memory: { store }', () => {
  it('commits each turn in Lagent shape, and a new agent on the store continues the session', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({ llm: echo(), memory: { store }, name: 'assistant' });
    await agent.call('one', { sessionId: 'alice' });
    await agent.call('two', { sessionId: 'alice' });
    const stored = store.readSession('assistant', 'alice')!;
    expect(stored.version).toBe(2);
    expect(stored.state.memory!.map((m) => [m.sender, m.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'reply to one'],
      ['user', 'two'],
      ['assistant', 'reply to two'],
    ]);
    expect(stored.state.memory![0]).toHaveProperty('stream_state');

    // Another process: a fresh agent of the same name on the same store sees the whole history.
    let seen: string[] = [];
    const restarted = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          seen = messages.map((m) => String(m.content));
          return 'three';
        },
      }),
      memory: { store },
      name: 'assistant',
    });
    await restarted.call('again', { sessionId: 'alice' });
    expect(seen).toEqual(['one', 'reply to one', 'two', 'reply to two', 'again']);
    expect(store.readSession('assistant', 'alice')!.version).toBe(3);
  });

  it('a failed call leaves the store exactly as before', async () => {
    const store = new MemoryStore();
    let fail = false;
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: () => {
          if (fail) throw new Error('model down');
          return 'ok';
        },
      }),
      memory: { store },
      name: 'a',
    });
    await agent.call('first', { sessionId: 1 });
    const before = store.readSession('a', '1');
    fail = true;
    await expect(agent.call('second', { sessionId: 1 })).rejects.toThrow('model down');
    expect(store.readSession('a', '1')).toEqual(before);
    // The lease went back: another owner can take the session at once.
    expect(store.acquireSession('a', '1', { owner: 'other', leaseMs: 1000 }).acquired).toBe(true);
    store.releaseSession('a', '1', 'other');
    fail = false;
    await agent.call('third', { sessionId: 1 });
    expect(contents(store, 'a', '1')).toEqual(['first', 'ok', 'third', 'ok']);
  });

  it('keeps the whole tree: a composite and its sub-agents, in one turn per outermost call', async () => {
    const store = new MemoryStore();
    class Blogger extends AsyncAgent {
      writer = new AsyncAgent({ llm: echo(), name: 'writer' });
      critic = new AsyncAgent({ llm: echo(), name: 'critic' });
      override async forward([message]: AgentMessage[], options: AsyncForwardOptions) {
        const draft = await this.writer.call(message!, options);
        return this.critic.call(draft, options);
      }
    }
    const blogger = new Blogger({ memory: { store }, name: 'blogger' });
    await blogger.call('topic', { sessionId: 's' });
    const stored = store.readSession('blogger', 's')!;
    expect(stored.version).toBe(1);
    expect(Object.keys(stored.state).sort()).toEqual(['critic.memory', 'memory', 'writer.memory']);
    expect(contents(store, 'blogger', 's', 'writer.memory')).toEqual(['topic', 'reply to topic']);

    const fresh = new Blogger({ memory: { store }, name: 'blogger' });
    await fresh.call('next', { sessionId: 's' });
    expect(contents(store, 'blogger', 's', 'writer.memory')).toEqual([
      'topic',
      'reply to topic',
      'next',
      'reply to next',
    ]);
    expect(fresh.stateDict('s')['writer.memory']).toHaveLength(4);
  });

  it('two agents sharing a store never interleave one session: the second waits for the lease', async () => {
    const store = new MemoryStore();
    const a = new AsyncAgent({ llm: echo(30), memory: { store }, name: 'shared' });
    const b = new AsyncAgent({ llm: echo(30), memory: { store }, name: 'shared' });
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).call(`m${i}`, { sessionId: 'x' })),
    );
    const stored = store.readSession('shared', 'x')!;
    expect(stored.version).toBe(6);
    const messages = stored.state.memory!.map((m) => String(m.content));
    expect(messages).toHaveLength(12);
    // Each input is followed by its own reply: no turn was interleaved with another.
    for (let i = 0; i < 12; i += 2) expect(messages[i + 1]).toBe(`reply to ${messages[i]}`);
    // Each agent saw every turn the other committed before its own (its prompts grew by whole turns).
    expect(new Set(messages.filter((_, i) => i % 2 === 0))).toEqual(
      new Set(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']),
    );
  });

  it('a call waiting for a session another process holds stops when aborted, touching nothing', async () => {
    const store = new MemoryStore();
    store.acquireSession('w', '1', { owner: 'elsewhere', leaseMs: 60_000 });
    const agent = new AsyncAgent({ llm: echo(), memory: { store }, name: 'w' });
    const controller = new AbortController();
    // Abort once the call has asked for the lease and been refused (it waits for the holder).
    const acquire = vi.spyOn(store, 'acquireSession');
    const waiting = agent.call('x', { sessionId: 1, signal: controller.signal });
    await expect.poll(() => acquire).toHaveReturnedWith(expect.objectContaining({ acquired: false }));
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(agent.stateDict(1).memory).toEqual([]);
    expect(store.readSession('w', '1')).toBeUndefined();
  });

  it('a call renews its lease while it runs; one whose lease another took fails with StoreConflictError, and is taken back', async () => {
    // The store's clock and the renewal timer are fake: the call waits at a gate, time moves only when told.
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
    try {
      const store = new MemoryStore();
      let open: (() => void) | undefined;
      const slow = new Gated({ memory: { store, leaseMs: 40 }, name: 'n' }, (resolve) => {
        open = resolve;
      });
      const call = slow.call('slow', { sessionId: 1 });
      await vi.waitFor(() => expect(open).toBeDefined());
      // Ten leases' time passes while the model answers: the call renews its lease, so nobody takes it...
      await vi.advanceTimersByTimeAsync(400);
      expect(store.acquireSession('n', '1', { owner: 'intruder', leaseMs: 10_000 }).acquired).toBe(false);
      open!();
      await call;
      expect(contents(store, 'n', '1')).toEqual(['slow', 'reply to slow']);

      // ...unless another owner takes the session meanwhile (here: it is deleted and taken).
      open = undefined;
      const second = slow.call('late', { sessionId: 1 });
      await vi.waitFor(() => expect(open).toBeDefined());
      store.deleteSession('n', '1');
      store.acquireSession('n', '1', { owner: 'intruder', leaseMs: 10_000 });
      store.commitTurn('n', '1', { owner: 'intruder', version: 0, turn: { append: { memory: [] } } });
      open!();
      await expect(second).rejects.toBeInstanceOf(StoreConflictError);
      expect(slow.stateDict(1).memory).toEqual(
        expect.arrayContaining([expect.objectContaining({ content: 'reply to slow' })]),
      );
      expect(slow.stateDict(1).memory).toHaveLength(2);
      // The next call reloads what the store has (the intruder's empty session) and goes on from there.
      open = undefined;
      const again = slow.call('again', { sessionId: 1 });
      await vi.waitFor(() => expect(open).toBeDefined());
      open!();
      await again;
      expect(contents(store, 'n', '1')).toEqual(['again', 'reply to again']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a call whose renewal another owner refused stops before its commit, naming why', async () => {
    const store = new MemoryStore();
    let open: (() => void) | undefined;
    const agent = new Gated({ memory: { store, leaseMs: 30 }, name: 'r' }, (resolve) => {
      open = resolve;
    });
    const call = agent.call('x', { sessionId: 's' });
    await vi.waitFor(() => expect(open).toBeDefined());
    // Another owner takes the session (its lease was made to run out) and the holder's next renewal is refused.
    const renewed = new Promise<void>((resolve) => {
      const renew = store.renewLease.bind(store);
      store.renewLease = (...args) => {
        const kept = renew(...args);
        if (!kept) resolve();
        return kept;
      };
    });
    store.deleteSession('r', 's');
    store.acquireSession('r', 's', { owner: 'other', leaseMs: 60_000 });
    await renewed;
    open!();
    await expect(call).rejects.toThrow(/no longer held by this call: another owner took its lease/);
    expect(store.readSession('r', 's')).toBeUndefined();
  });

  it('back-to-back calls on a session of an async store never wait for the lease of the call before', async () => {
    const store = new MemoryStore();
    // The store answers a release late (another connection of a pool): the next acquire must not find it held.
    const late = new Proxy(store, {
      get(target, key) {
        if (key === 'synchronous') return false;
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          // Late by turns of the event loop, not by a time: the calls after it go on meanwhile.
          if (key === 'releaseSession') for (let turn = 0; turn < 3; turn++) await new Promise(setImmediate);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as unknown as SessionStore;
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      const agent = new AsyncAgent({
        llm: echo(),
        memory: { store: late },
        durable: { store: late },
        name: 'b2b',
      });
      for (let i = 0; i < 5; i++) await agent.call(`m${i}`, { sessionId: 's' });
    } finally {
      process.off('warning', listen);
    }
    expect(warnings.filter((warning) => /is held by another call/.test(warning.message))).toEqual([]);
    expect(store.readSession('b2b', 's')!.version).toBe(5);
  });

  it('a call waiting for a session another process holds says once which one, and until when', async () => {
    // The store's clock stands still: the lease's end is known exactly.
    const now = Date.parse('2030-01-02T03:04:05.678Z');
    const store = new MemoryStore({ clock: () => now });
    const until = now + 60_000;
    store.acquireSession('w', 'busy', { owner: 'elsewhere', leaseMs: 60_000 });
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      const agent = new AsyncAgent({ llm: echo(), memory: { store }, name: 'w' });
      const controller = new AbortController();
      const waiting = agent.call('x', { sessionId: 'busy', signal: controller.signal });
      await vi.waitFor(() => expect(warnings).toHaveLength(1));
      controller.abort(new Error('gave up'));
      await expect(waiting).rejects.toThrow('gave up');
    } finally {
      process.off('warning', listen);
    }
    expect(warnings).toHaveLength(1);
    expect((warnings[0] as Error & { code?: string }).code).toBe('LAGENT_SESSION_WAIT');
    expect(warnings[0]!.message).toContain('session "busy" of "w"');
    const at = Date.parse(/until (\S+) \(its lease\)/.exec(warnings[0]!.message)![1]!);
    expect(at).toBe(until);
  });

  it('holds at most maxSessions sessions in memory; a dropped one is reloaded from the store', async () => {
    const store = new MemoryStore();
    let seen: unknown[] = [];
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          seen = messages.map((m) => m.content);
          return 'ok';
        },
      }),
      memory: { store, maxSessions: 2 },
      name: 'lru',
    });
    for (const id of ['a', 'b', 'c', 'd']) await agent.call(`hello ${id}`, { sessionId: id });
    expect(agent.memory!.size).toBe(2);
    await agent.call('back', { sessionId: 'a' });
    expect(seen).toEqual(['hello a', 'ok', 'back']);
    expect(agent.memory!.size).toBe(2);
  });

  it('reset in memory is stored with the next turn', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({ llm: echo(), memory: { store }, name: 'r' });
    await agent.call('one', { sessionId: 1 });
    agent.reset(1);
    await agent.call('two', { sessionId: 1 });
    expect(contents(store, 'r', '1')).toEqual(['two', 'reply to two']);
  });

  it('sync agents take sync stores, and refuse async ones with a clear error', () => {
    const store = new MemoryStore();
    const agent = new Agent({ llm: new MockLLM({ responses: ['a', 'b'] }), memory: { store }, name: 'sync' });
    agent.call('x', { sessionId: 0 });
    agent.call('y', { sessionId: 0 });
    expect(contents(store, 'sync', '0')).toEqual(['x', 'a', 'y', 'b']);
    expect(
      () => new Agent({ llm: new MockLLM({ responses: [] }), memory: { store: asAsync(store) } }),
    ).toThrow(ConfigurationError);
    expect(
      () => new Agent({ llm: new MockLLM({ responses: [] }), memory: { store: asAsync(store) } }),
    ).toThrow(/asynchronous.*Async\* agent/);
  });

  it('async agents take async stores', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({ llm: echo(), memory: { store: asAsync(store) }, name: 'as' });
    await agent.call('x', { sessionId: 0 });
    expect(contents(store, 'as', '0')).toEqual(['x', 'reply to x']);
  });

  it('a store that fails fails the call with a StoreError naming the session, and nothing is kept', async () => {
    const store = new MemoryStore();
    const broken = new Proxy(store, {
      get(target, key) {
        if (key === 'commitTurn') return () => Promise.reject(new Error('connection reset'));
        if (key === 'synchronous') return false;
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as unknown as SessionStore;
    const agent = new AsyncAgent({ llm: echo(), memory: { store: broken }, name: 'b' });
    const failed = agent.call('x', { sessionId: 'bob' });
    await expect(failed).rejects.toBeInstanceOf(StoreError);
    await expect(failed).rejects.toThrow(/commitTurn of session "bob" failed: connection reset/);
    expect(agent.stateDict('bob').memory).toEqual([]);
    expect(store.readSession('b', 'bob')).toBeUndefined();
  });

  it('a commit whose answer was lost is checked before the call reports failure: the turn is there once', async () => {
    const store = new MemoryStore();
    let lost = 1;
    // The store commits the turn, and the answer never comes back (a timeout, a broken connection).
    const timingOut = new Proxy(store, {
      get(target, key) {
        if (key === 'synchronous') return false;
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (key === 'commitTurn' && lost-- > 0) throw new Error('Command timed out');
          return result;
        };
      },
    }) as unknown as SessionStore;
    const agent = new AsyncAgent({ llm: echo(), memory: { store: timingOut }, name: 'pay' });
    expect((await agent.call('pay bob', { sessionId: 's' })).content).toBe('reply to pay bob');
    await agent.call('next', { sessionId: 's' });
    expect(contents(store, 'pay', 's')).toEqual(['pay bob', 'reply to pay bob', 'next', 'reply to next']);
    expect(store.readSession('pay', 's')!.version).toBe(2);
  });

  it('a stored session that cannot be loaded is a StoreError naming it; other sessions work', async () => {
    const store = new MemoryStore();
    store.acquireSession('c', 'bad', { owner: 'o', leaseMs: 1000 });
    store.commitTurn('c', 'bad', {
      owner: 'o',
      version: 0,
      turn: { append: { memory: [{ content: 1, sender: 3 } as never] } },
    });
    const agent = new AsyncAgent({ llm: echo(), memory: { store }, name: 'c' });
    await expect(agent.call('x', { sessionId: 'bad' })).rejects.toThrow(/session "bad" cannot be loaded/);
    await agent.call('x', { sessionId: 'good' });
    expect(contents(store, 'c', 'good')).toEqual(['x', 'reply to x']);
    // The failed load released the lease.
    expect(store.acquireSession('c', 'bad', { owner: 'p', leaseMs: 1000 }).acquired).toBe(true);
  });

  it('checks its options', () => {
    expect(() => new AsyncAgent({ memory: { store: {} as SessionStore } })).toThrow(/session store/);
    expect(() => new AsyncAgent({ memory: { store: new MemoryStore(), leaseMs: 0 } })).toThrow(/leaseMs/);
    expect(() => new AsyncAgent({ memory: { store: new MemoryStore(), maxSessions: -1 } })).toThrow(
      /maxSessions/,
    );
    expect(new AgentMessage({ content: 'unused' })).toBeDefined();
  });
});
