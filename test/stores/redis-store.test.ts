import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  AgentMessage,
  AsyncAgent,
  ConfigurationError,
  type LagentMessageJSON,
  MemoryStore,
  StoreError,
} from 'lagent-ts';
import type { SessionStore, SessionTurn } from 'lagent-ts/stores';
import { RedisStore } from 'lagent-ts/stores';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisStoreKeys } from '#src/stores/redis-keys';
import { type RedisServer, startRedis } from '../distributed/queue/redis-server';
import { describeStoreContract } from './contract';

let server: RedisServer;
let admin: Redis;
const prefix = `test-${process.pid}`;
const keys = new RedisStoreKeys(prefix);

beforeAll(async () => {
  // With an append-only file, so a restart keeps the data.
  server = await startRedis({ persist: true });
  admin = new Redis(server.port, '127.0.0.1');
  admin.on('error', () => {});
});
afterAll(async () => {
  admin?.disconnect();
  await server?.close();
});

describeStoreContract('RedisStore', () => ({
  open: async (options = {}) => new RedisStore({ url: server.url, prefix, ...options }),
  corrupt: async (namespace, sessionId) => {
    await admin.hset(keys.session(namespace, sessionId), 'state', '{"memory": [not json');
  },
  stopServer: () => server.stop(),
  restartServer: () => server.start(),
}));

const message = (content: string): LagentMessageJSON =>
  new AgentMessage({ sender: 'user', content }).toJSON({ format: 'lagent' });
let counter = 0;
const fresh = (label: string) => `${label}-${++counter}`;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const root = fileURLToPath(new URL('../../', import.meta.url));
const committer = fileURLToPath(new URL('./fixtures/redis-committer.ts', import.meta.url));

/** Commits `turns` through a store (taking and releasing the lease each time); the versions it got. */
async function commitAll(
  store: SessionStore,
  ns: string,
  id: string,
  turns: SessionTurn[],
): Promise<number[]> {
  const versions: number[] = [];
  for (const turn of turns) {
    const lease = await store.acquireSession(ns, id, { owner: 'w', leaseMs: 10_000 });
    if (!lease.acquired) throw new Error('busy');
    versions.push(await store.commitTurn(ns, id, { owner: 'w', version: lease.version, turn }));
  }
  return versions;
}

/** A child process running the committer fixture. */
function startCommitter(options: Record<string, unknown>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', committer, JSON.stringify(options)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe('RedisStore', () => {
  it('refuses data written by a newer schema, and records its own on a new prefix', async () => {
    const newer = `${prefix}-newer`;
    await admin.hset(`${newer}:meta`, 'schema', '99');
    const store = new RedisStore({ url: server.url, prefix: newer });
    try {
      const failed = store.readSession('ns', 's');
      await expect(failed).rejects.toBeInstanceOf(StoreError);
      await expect(failed).rejects.toThrow(/newer version of lagent-ts \(schema 99/);
    } finally {
      await store.close();
    }
    const fresher = new RedisStore({ url: server.url, prefix: `${prefix}-fresh` });
    expect(await fresher.readSession('ns', 's')).toBeUndefined();
    expect(await admin.hget(`${prefix}-fresh:meta`, 'schema')).toBe('1');
    await fresher.close();
  });

  it('folds turns into a new base: the same state as MemoryStore, with a bounded list of turns', async () => {
    const ns = fresh('fold');
    const turns: SessionTurn[] = [];
    for (let n = 0; n < 100; n++) {
      if (n % 17 === 5)
        turns.push({ replace: { memory: [message(`reset-${n}`)] }, append: { other: [message(`o${n}`)] } });
      else turns.push({ append: { memory: [message(`q${n}`), message(`a${n}`)], empty: [] } });
    }
    const store = new RedisStore({ url: server.url, prefix });
    const memory = new MemoryStore();
    try {
      expect(await commitAll(store, ns, 's', turns)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      await commitAll(memory, ns, 's', turns);
      const read = await store.readSession(ns, 's');
      expect(read?.state).toEqual(memory.readSession(ns, 's')?.state);
      expect(read?.version).toBe(100);
      expect(await admin.llen(keys.turns(ns, 's'))).toBeLessThanOrEqual(33);
      expect(Number(await admin.hget(keys.session(ns, 's'), 'base'))).toBeGreaterThanOrEqual(67);
    } finally {
      await store.close();
    }
  });

  it('keys: any string, listed in JavaScript string order (as MemoryStore)', async () => {
    const ns = fresh('keys:{odd}');
    const ids = ['\uffff', '😀', 'a:b', 'a', 'a:', '\ud800', '\udbff', '{x}', 'é', 'e\u0301', '\u0000'];
    const store = new RedisStore({ url: server.url, prefix });
    try {
      for (const id of ids) await commitAll(store, ns, id, [{ append: { memory: [message(id)] } }]);
      const page = await store.listSessions(ns, { limit: 5 });
      const rest = await store.listSessions(ns, { after: page.next, limit: 100 });
      expect([...page.sessions, ...rest.sessions].map((session) => session.sessionId)).toEqual(
        [...ids].sort(),
      );
      for (const id of ids) expect((await store.readSession(ns, id))?.state.memory?.[0]?.content).toBe(id);
    } finally {
      await store.close();
    }
  });

  it('expires keys in Redis too, and purgeExpired clears them from the index', async () => {
    const ns = fresh('ttl');
    const store = new RedisStore({ url: server.url, prefix, ttlMs: 150 });
    try {
      await commitAll(store, ns, 'a', [{ append: { memory: [message('1')] } }]);
      await store.appendJournal(ns, 'a', 'call', { x: 1 });
      const ttl = await admin.pttl(keys.session(ns, 'a'));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(150);
      await pause(250);
      expect(await admin.exists(keys.session(ns, 'a'))).toBe(0);
      expect(await admin.zcard(keys.index(ns))).toBe(1);
      expect(await store.purgeExpired()).toBeGreaterThanOrEqual(1);
      expect(await admin.zcard(keys.index(ns))).toBe(0);
      expect(await admin.zcard(keys.expiry(ns))).toBe(0);
      expect(await store.readJournal(ns, 'call')).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('works on a client the caller owns, and leaves it open; a URL password is not in messages', async () => {
    const client = new Redis(server.port, '127.0.0.1');
    const store = new RedisStore({ client, prefix });
    const ns = fresh('client');
    await commitAll(store, ns, 's', [{ append: { memory: [message('1')] } }]);
    expect((await store.readSession(ns, 's'))?.version).toBe(1);
    await store.close();
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
    expect(new RedisStore({ url: 'redis://user:secret@127.0.0.1:1' }).description).toBe(
      'RedisStore(redis://user:***@127.0.0.1:1)',
    );
    expect(() => new RedisStore({ url: 'http://x' })).toThrow(ConfigurationError);
    expect(() => new RedisStore({})).toThrow(ConfigurationError);
  });

  it('a stopped server fails calls (no waiting for it), commits nothing half, and the store works again after', async () => {
    const ns = fresh('down');
    const store = new RedisStore({ url: server.url, prefix, timeoutMs: 2_000 });
    try {
      await commitAll(store, ns, 's', [{ append: { memory: [message('1')] } }]);
      const lease = await store.acquireSession(ns, 's', { owner: 'w', leaseMs: 30_000 });
      await server.stop();
      try {
        const failed = store.commitTurn(ns, 's', {
          owner: 'w',
          version: 1,
          turn: { append: { memory: [message('2')] } },
          release: false,
        });
        await expect(failed).rejects.toBeInstanceOf(StoreError);
        await expect(failed).rejects.toThrow(/commitTurn "s" of "down-\d+" failed: .*ECONNREFUSED/);
        await expect(store.listSessions(ns)).rejects.toBeInstanceOf(StoreError);
      } finally {
        await server.start();
      }
      expect(lease.acquired).toBe(true);
      const read = await store.readSession(ns, 's');
      expect(read?.version).toBe(1);
      expect(read?.state).toEqual({ memory: [message('1')] });
      expect(
        await store.commitTurn(ns, 's', {
          owner: 'w',
          version: 1,
          turn: { append: { memory: [message('2')] } },
        }),
      ).toBe(2);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('a commit held past timeoutMs is checked before the call reports failure: the turn lands once, the call succeeds', async () => {
    const ns = fresh('held');
    const store = new RedisStore({ url: server.url, prefix, timeoutMs: 200 });
    /** Redis holds every write for 600 ms once the model has answered: the commit's answer comes too late. */
    class Paying extends AsyncAgent {
      override async forward(messages: AgentMessage[]): Promise<string> {
        await admin.call('CLIENT', 'PAUSE', '600', 'WRITE');
        return `paid ${String(messages.at(-1)?.content)}`;
      }
    }
    const agent = new Paying({ memory: { store, namespace: ns } });
    try {
      expect((await agent.call('bob $80', { sessionId: 's' })).content).toBe('paid bob $80');
      const read = await store.readSession(ns, 's');
      expect(read?.version).toBe(1);
      expect(read?.state.memory?.map((m) => m.content)).toEqual(['bob $80', 'paid bob $80']);
      // The next call goes on from exactly that turn.
      await agent.call('alice $5', { sessionId: 's' });
      expect((await store.readSession(ns, 's'))?.version).toBe(2);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('two processes commit to one session: no lost or interleaved turns, versions 1..N', async () => {
    const ns = fresh('two');
    const turns = 60;
    const child = startCommitter({
      url: server.url,
      prefix,
      namespace: ns,
      sessionId: 's',
      owner: 'child',
      turns,
      mode: 'commit',
    });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    let errors = '';
    child.stderr!.on('data', (chunk) => (errors += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const store = new RedisStore({ url: server.url, prefix });
    try {
      const mine: number[] = [];
      for (let n = 0; n < turns; n++) {
        for (;;) {
          const lease = await store.acquireSession(ns, 's', { owner: 'parent', leaseMs: 5_000 });
          if (!lease.acquired) {
            await pause(Math.random() * 2);
            continue;
          }
          const turn = { append: { memory: [message(`parent-${n}-q`), message(`parent-${n}-a`)] } };
          mine.push(await store.commitTurn(ns, 's', { owner: 'parent', version: lease.version, turn }));
          break;
        }
      }
      expect(await exited, errors).toBe(0);
      const theirs = JSON.parse(output) as number[];
      expect([...mine, ...theirs].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 2 * turns }, (_, i) => i + 1),
      );
      const memory = (await store.readSession(ns, 's'))!.state.memory!.map((m) => m.content as string);
      expect(memory).toHaveLength(4 * turns);
      const seen = { parent: 0, child: 0 };
      for (let i = 0; i < memory.length; i += 2) {
        const [owner, n] = memory[i]!.split('-') as ['parent' | 'child', string];
        expect(memory[i]).toBe(`${owner}-${seen[owner]}-q`);
        expect(memory[i + 1]).toBe(`${owner}-${n}-a`);
        seen[owner]++;
      }
      expect(seen).toEqual({ parent: turns, child: turns });
    } finally {
      child.kill('SIGKILL');
      await store.close();
    }
  }, 30_000);

  it('a process killed (-9) while holding the lease: nothing half-written, the lease expires, another takes over', async () => {
    const ns = fresh('killed');
    const child = startCommitter({
      url: server.url,
      prefix,
      namespace: ns,
      sessionId: 's',
      owner: 'child',
      turns: 0,
      mode: 'hold',
    });
    let committed = 0;
    child.stdout!.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line) committed = Number(line);
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const store = new RedisStore({ url: server.url, prefix });
    try {
      for (let waited = 0; committed < 20 && waited < 15_000; waited += 10) await pause(10);
      expect(committed).toBeGreaterThanOrEqual(20);
      child.kill('SIGKILL');
      await exited;
      const busy = await store.acquireSession(ns, 's', { owner: 'parent', leaseMs: 5_000 });
      expect(busy.acquired).toBe(false);
      // The dead holder's lease (1 s, renewed while it lived) ends at most one lease from now (Redis's clock is
      // this machine's): then the session is ours.
      if (!busy.acquired) expect(busy.until - Date.now()).toBeLessThanOrEqual(1_000);
      let lease = busy;
      while (!lease.acquired) {
        await pause(20);
        lease = await store.acquireSession(ns, 's', { owner: 'parent', leaseMs: 5_000 });
      }
      const memory = lease.state!.memory!.map((m) => m.content as string);
      expect(memory).toHaveLength(2 * lease.version);
      for (let n = 0; n < lease.version; n++)
        expect(memory.slice(2 * n, 2 * n + 2)).toEqual([`child-${n}-q`, `child-${n}-a`]);
      expect(
        await store.commitTurn(ns, 's', {
          owner: 'parent',
          version: lease.version,
          turn: { append: { memory: [message('p')] } },
        }),
      ).toBe(lease.version + 1);
    } finally {
      child.kill('SIGKILL');
      await store.close();
    }
  }, 30_000);

  it('without ioredis installed, says what to install on first use', async () => {
    vi.resetModules();
    vi.doMock('ioredis', () => {
      throw new Error("Cannot find package 'ioredis'");
    });
    try {
      const { RedisStore: Fresh } = await import('#src/stores/redis-store');
      const store = new Fresh({ url: server.url, prefix });
      const failed = store.readSession('ns', 's');
      // A fresh module graph: its ConfigurationError is another class object, so the name is checked.
      await expect(failed).rejects.toMatchObject({ name: 'ConfigurationError' });
      await expect(failed).rejects.toThrow(/^install ioredis to use RedisStore \(npm install ioredis\)/);
    } finally {
      vi.doUnmock('ioredis');
      vi.resetModules();
    }
  });
});
