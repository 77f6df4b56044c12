import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LagentMessageJSON } from 'lagent-ts';
import { Agent, AsyncAgent, StoreConflictError, StoreError } from 'lagent-ts';
import type { RunLogStore, SessionStore } from 'lagent-ts/stores';
import { SQLiteStore } from 'lagent-ts/stores';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { attachStore } from '#src/agents/interceptors/session-store/persist';
import { driveSync } from '#src/core/steps';
import { sessionKey } from '#src/schema/session';
import { type SqliteDatabase, sqliteKey } from '#src/stores/sqlite-schema';
import { describeStoreContract } from './contract';

/*
 * SQLiteStore's grouped writes (acquireSessionGrouped, commitTurnGrouped): the lease and commit writes of
 * concurrent async calls share one write transaction.
 */

const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  path: string,
  options?: { timeout?: number },
) => SqliteDatabase;

const dir = mkdtempSync(join(tmpdir(), 'lagent-sqlite-grouped-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(dir, `grouped-${++files}.db`);

const message = (content: string): LagentMessageJSON => ({
  sender: 'user',
  content,
  formatted: null,
  extra_info: null,
  type: null,
  receiver: null,
  stream_state: 0,
});

/** The store seen as an async store whose lease and commit writes are the grouped ones. */
function groupedView(store: SQLiteStore): SessionStore & RunLogStore {
  return {
    synchronous: false,
    description: store.description,
    acquireSession: async (...args) => store.acquireSessionGrouped(...args).result,
    commitTurn: async (...args) => store.commitTurnGrouped(...args).result,
    renewLease: async (...args) => store.renewLease(...args),
    releaseSession: async (...args) => store.releaseSession(...args),
    readSession: async (...args) => store.readSession(...args),
    listSessions: async (...args) => store.listSessions(...args),
    deleteSession: async (...args) => store.deleteSession(...args),
    purgeExpired: async (...args) => store.purgeExpired(...args),
    appendJournal: async (...args) => store.appendJournal(...args),
    readJournal: async (...args) => store.readJournal(...args),
    finishJournal: async (...args) => store.finishJournal(...args),
    listJournals: async (...args) => store.listJournals(...args),
    deleteJournal: async (...args) => store.deleteJournal(...args),
    listUnfinishedCalls: async (...args) => store.listUnfinishedCalls(...args),
    createRun: async (...args) => store.createRun(...args),
    appendRuns: async (...args) => store.appendRuns(...args),
    readRun: async (...args) => store.readRun(...args),
    readRunEvents: async (...args) => store.readRunEvents(...args),
    listRuns: async (...args) => store.listRuns(...args),
    cancelRun: async (...args) => store.cancelRun(...args),
    deleteRun: async (...args) => store.deleteRun(...args),
    watchRun: (...args) => store.watchRun(...args),
    watchesOtherProcesses: false,
    close: async () => store.close(),
  };
}

// The whole contract, with every acquire and commit made through the grouped writes.
const contractFile = freshFile();
describeStoreContract('SQLiteStore (grouped writes)', () => ({
  open: async (options = {}) => groupedView(new SQLiteStore({ path: contractFile, ...options })),
  corrupt: async (namespace, sessionId) => {
    const db = new Database(contractFile);
    try {
      const keys = [sqliteKey(namespace), sqliteKey(sessionId)];
      db.prepare('UPDATE lagent_bases SET state = ? WHERE namespace = ? AND session_id = ?').run(
        '{"mem',
        ...keys,
      );
      db.prepare('UPDATE lagent_turns SET turn = ? WHERE namespace = ? AND session_id = ?').run(
        'garbage',
        ...keys,
      );
    } finally {
      db.close();
    }
  },
}));

/** A database whose write transactions (BEGIN IMMEDIATE) are counted. */
function countingDatabase(file: string): { db: SqliteDatabase; transactions: () => number } {
  const db = new Database(file, { timeout: 5_000 });
  db.pragma('journal_mode = WAL');
  let count = 0;
  const transaction: SqliteDatabase['transaction'] = (fn) => {
    const made = db.transaction(fn);
    const counted = ((...args: Parameters<typeof made>) => made(...args)) as typeof made;
    counted.deferred = (...args) => made.deferred(...args);
    counted.immediate = (...args) => {
      count++;
      return made.immediate(...args);
    };
    return counted;
  };
  const counting = new Proxy(db, {
    get: (target, property) => {
      if (property === 'transaction') return transaction;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: counting, transactions: () => count };
}

describe('SQLiteStore grouped writes', () => {
  it('a lone write is made at once; the writes that follow in the same turn share one transaction, and a refused one fails alone', async () => {
    const { db, transactions } = countingDatabase(freshFile());
    const store = new SQLiteStore({ database: db });
    try {
      const lease = { leaseMs: 10_000 };
      const before = transactions();
      const first = store.acquireSessionGrouped('ns', 'a', { owner: 'one', ...lease });
      expect(first.made).toEqual({ value: { acquired: true, version: 0, state: {} } });
      expect(transactions() - before).toBe(1);
      const queued = [
        store.acquireSessionGrouped('ns', 'b', { owner: 'one', ...lease }),
        // After one's: busy.
        store.acquireSessionGrouped('ns', 'a', { owner: 'two', ...lease }),
      ];
      expect(queued.map((write) => write.made)).toEqual([undefined, undefined]);
      const acquired = await Promise.all([first.result, ...queued.map((write) => write.result)]);
      expect(transactions() - before).toBe(2);
      expect(acquired.map((result) => result.acquired)).toEqual([true, true, false]);

      // The last group held several writes: now every write is queued, the first of a turn too.
      const turn = { append: { memory: [message('hi')] } };
      const commits = [
        store.commitTurnGrouped('ns', 'a', { owner: 'one', version: 0, turn }).result,
        // A version that is not the store's: refused, and only this one.
        store.commitTurnGrouped('ns', 'b', { owner: 'one', version: 5, turn }).result,
        // Not the lease holder: refused.
        store.commitTurnGrouped('ns', 'a', { owner: 'two', version: 0, turn }).result,
      ];
      const settled = await Promise.allSettled(commits);
      expect(transactions() - before).toBe(3);
      expect(settled[0]).toEqual({ status: 'fulfilled', value: 1 });
      for (const refused of settled.slice(1)) {
        expect(refused.status).toBe('rejected');
        expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
      }
      expect(store.readSession('ns', 'a')?.state).toEqual({ memory: [message('hi')] });
      // b is still leased to one, at version 0, and its commit goes through now.
      expect(store.acquireSession('ns', 'b', { owner: 'two', ...lease }).acquired).toBe(false);
      expect(await store.commitTurnGrouped('ns', 'b', { owner: 'one', version: 0, turn }).result).toBe(1);
    } finally {
      store.close();
      db.close();
    }
  });

  it('an acquire of a session that cannot be read fails alone and takes no lease', async () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    try {
      const turn = { append: { memory: [message('hi')] } };
      for (const id of ['bad', 'good']) {
        store.acquireSession('ns', id, { owner: 'one', leaseMs: 10_000 });
        store.commitTurn('ns', id, { owner: 'one', version: 0, turn });
      }
      const raw = new Database(file);
      raw
        .prepare('UPDATE lagent_turns SET turn = ? WHERE namespace = ? AND session_id = ?')
        .run('garbage', sqliteKey('ns'), sqliteKey('bad'));
      raw.close();
      // good is the turn's first write (made at once), bad is queued with another.
      const settled = await Promise.allSettled([
        store.acquireSessionGrouped('ns', 'good', { owner: 'two', leaseMs: 10_000 }).result,
        store.acquireSessionGrouped('ns', 'bad', { owner: 'two', leaseMs: 10_000 }).result,
        store.acquireSessionGrouped('ns', 'other', { owner: 'two', leaseMs: 10_000 }).result,
      ]);
      expect(settled[0]).toMatchObject({ status: 'fulfilled', value: { acquired: true, version: 1 } });
      expect(settled[1]!.status).toBe('rejected');
      expect(((settled[1] as PromiseRejectedResult).reason as StoreError).message).toMatch(
        /session "bad" of "ns" cannot be read/,
      );
      expect(settled[2]).toMatchObject({ status: 'fulfilled', value: { acquired: true, version: 0 } });
      // No lease was left on the unreadable session.
      expect(store.acquireSession('ns', 'bad', { owner: 'three', leaseMs: 10_000, knownVersion: 1 })).toEqual(
        {
          acquired: true,
          version: 1,
          state: undefined,
        },
      );
    } finally {
      store.close();
    }
  });

  it('a database error fails every write of the group, and none of them is written', async () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file, busyTimeoutMs: 50 });
    try {
      store.acquireSession('ns', 'a', { owner: 'one', leaseMs: 10_000 });
      const raw = new Database(file);
      raw.exec('BEGIN IMMEDIATE');
      const turn = { append: { memory: [message('hi')] } };
      const settled = await Promise.allSettled([
        store.acquireSessionGrouped('ns', 'b', { owner: 'one', leaseMs: 10_000 }).result,
        store.commitTurnGrouped('ns', 'a', { owner: 'one', version: 0, turn }).result,
      ]);
      raw.exec('ROLLBACK');
      raw.close();
      for (const [index, failed] of settled.entries()) {
        expect(failed.status).toBe('rejected');
        const reason = (failed as PromiseRejectedResult).reason as StoreError;
        expect(reason).toBeInstanceOf(StoreError);
        expect(reason).not.toBeInstanceOf(StoreConflictError);
        expect(reason.message).toMatch(
          index === 0 ? /acquireSession "b" of "ns" failed: database is locked/ : /commitTurn "a" of "ns"/,
        );
      }
      // Nothing was written: b is free, a is at version 0 and still one's.
      expect(store.acquireSession('ns', 'b', { owner: 'two', leaseMs: 10_000 }).acquired).toBe(true);
      expect(store.readSession('ns', 'a')).toBeUndefined();
      expect(store.commitTurn('ns', 'a', { owner: 'one', version: 0, turn })).toBe(1);
    } finally {
      store.close();
    }
  });

  it('a write taken back before it ran is not made; close() makes the queued ones first', async () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    // The turn's first write is made at once; the next ones are queued.
    expect(store.acquireSessionGrouped('ns', 'c', { owner: 'one', leaseMs: 10_000 }).cancel()).toBe(false);
    const taken = store.acquireSessionGrouped('ns', 'a', { owner: 'one', leaseMs: 10_000 });
    expect(taken.cancel()).toBe(true);
    const kept = store.acquireSessionGrouped('ns', 'b', { owner: 'one', leaseMs: 10_000 });
    await kept.result;
    expect(kept.cancel()).toBe(false);
    expect(store.acquireSession('ns', 'a', { owner: 'two', leaseMs: 10_000 }).acquired).toBe(true);

    const turn = { append: { memory: [message('hi')] } };
    const commit = store.commitTurnGrouped('ns', 'b', { owner: 'one', version: 0, turn });
    store.close();
    expect(await commit.result).toBe(1);
    const reopened = new SQLiteStore({ path: file });
    try {
      expect(reopened.readSession('ns', 'b')?.state).toEqual({ memory: [message('hi')] });
    } finally {
      reopened.close();
    }
  });

  it('concurrent AsyncAgent calls share transactions; a sync Agent writes directly', async () => {
    const { db, transactions } = countingDatabase(freshFile());
    const store = new SQLiteStore({ database: db });
    try {
      const agent = new AsyncAgent({
        name: 'grouped',
        llm: new AsyncMockLLM({ responses: () => 'ok', record: false }),
        memory: { store },
      });
      const before = transactions();
      await Promise.all(Array.from({ length: 16 }, (_, i) => agent.call('hi', { sessionId: `s${i}` })));
      // Without grouping: 2 per call (32).
      expect(transactions() - before).toBeLessThanOrEqual(4);
      for (let i = 0; i < 16; i++) expect(store.readSession('grouped', `s${i}`)?.version).toBe(1);

      const sync = new Agent({
        name: 'direct',
        llm: new MockLLM({ responses: () => 'ok', record: false }),
        memory: { store },
      });
      const start = transactions();
      sync.call('hi', { sessionId: 'x' });
      expect(transactions() - start).toBe(2);
      expect(store.readSession('direct', 'x')?.version).toBe(1);
    } finally {
      store.close();
      db.close();
    }
  });

  it('steps driven synchronously take their grouped write back and make it directly', () => {
    const store = new SQLiteStore({ path: freshFile() });
    try {
      const agent = new AsyncAgent({ name: 'steps', llm: new AsyncMockLLM({ responses: () => 'ok' }) });
      const binding = attachStore(agent, { store });
      const hold = driveSync(binding.begin(agent, sessionKey('s'), 's'));
      expect(hold.cached.version).toBe(0);
      // The lease was taken at once, and no grouped write is left to run.
      expect(store.acquireSession('steps', 's', { owner: 'other', leaseMs: 1_000 }).acquired).toBe(false);
      binding.release(hold);
      expect(store.acquireSession('steps', 's', { owner: 'other', leaseMs: 1_000 }).acquired).toBe(true);
    } finally {
      store.close();
    }
  });
});
