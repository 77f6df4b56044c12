import {
  ActionReturn,
  AgentMessage,
  AsyncAgent,
  type LagentMessageJSON,
  StoreConflictError,
  StoreError,
} from 'lagent-ts';
import type { RunLogStore, RunWrite, SessionStore, StoredState } from 'lagent-ts/stores';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLogOf } from '#src/stores/types';

/*
 * The contract every store keeps, run against each of them (tests/stores/*.test.ts) with the real service
 * behind it. A store test calls describeStoreContract with how to open a store on a fresh database, and
 * what it can do to the service (corrupt a stored value, stop the server) for the failure cases.
 */

/** What a store's test gives the contract suite. */
export interface StoreHarness {
  /** A store on the test's service; several may be open at once (they share the data). */
  open(options?: { ttlMs?: number }): Promise<SessionStore>;
  /** Makes the stored state of one session unreadable (a corrupted row or value). */
  corrupt?(namespace: string, sessionId: string): Promise<void>;
  /**
   * Stops the service (and `restart` starts it again on the same data), for the "server stopped" cases;
   * omitted for stores without a server.
   */
  stopServer?(): Promise<void>;
  restartServer?(): Promise<void>;
}

/** Awaits a store result whether the store is sync or async. */
async function run<T>(value: T | Promise<T>): Promise<T> {
  return value;
}

/** A store call as a promise, also when a sync store throws. */
async function attempt<T>(call: () => T | Promise<T>): Promise<T> {
  return call();
}

const message = (content: unknown, sender = 'user'): LagentMessageJSON =>
  new AgentMessage({ sender, content }).toJSON({ format: 'lagent' });

let counter = 0;
/** A namespace no other test uses. */
const fresh = (label: string) => `${label}-${process.pid}-${++counter}`;

export function describeStoreContract(name: string, harness: () => StoreHarness): void {
  describe(`${name}: the store contract`, () => {
    let store: SessionStore;
    let other: SessionStore;
    let h: StoreHarness;

    beforeAll(async () => {
      h = harness();
      store = await h.open();
      other = await h.open();
    });

    afterAll(async () => {
      await run(store?.close());
      await run(other?.close());
    });

    it('says whether it is synchronous, and returns values or promises accordingly', () => {
      const result = store.listSessions(fresh('kind'));
      expect(result instanceof Promise).toBe(!store.synchronous);
      if (result instanceof Promise) return result.then(() => undefined);
      return undefined;
    });

    it('round-trips turns: both message shapes, ActionReturns, non-ASCII, a 1 MB message', async () => {
      const ns = fresh('round');
      const lease = await run(store.acquireSession(ns, 'alice', { owner: 'a', leaseMs: 10_000 }));
      expect(lease).toEqual({ acquired: true, version: 0, state: {} });
      const result = new ActionReturn({
        type: 'search',
        args: { q: '数学' },
        result: [{ type: 'text', content: '🚀 ok' }],
      });
      const big = 'x'.repeat(1024 * 1024);
      const first: StoredState = {
        memory: [message('你好 — “quotes” 😀'), message(result, 'ActionExecutor')],
        'writer.memory': [message({ nested: { list: [1, 'two', null] } })],
      };
      expect(
        await run(
          store.commitTurn(ns, 'alice', { owner: 'a', version: 0, turn: { append: first }, release: false }),
        ),
      ).toBe(1);
      expect(
        await run(
          store.commitTurn(ns, 'alice', {
            owner: 'a',
            version: 1,
            turn: { append: { memory: [message(big, 'assistant')] } },
          }),
        ),
      ).toBe(2);

      const read = await run(other.readSession(ns, 'alice'));
      expect(read?.version).toBe(2);
      expect(read?.state['writer.memory']).toEqual(first['writer.memory']);
      expect(read?.state.memory).toHaveLength(3);
      expect(read?.state.memory?.[0]).toEqual(first.memory![0]);
      expect((read!.state.memory![2]!.content as string).length).toBe(big.length);
      // The ActionReturn comes back as one through AgentMessage.from.
      const back = AgentMessage.from(read!.state.memory![1]!);
      expect(back.content).toBeInstanceOf(ActionReturn);
      expect((back.content as ActionReturn).formatResult()).toBe('🚀 ok');

      // replace sets a path's whole history; a path in neither is unchanged.
      const lease2 = await run(
        other.acquireSession(ns, 'alice', { owner: 'b', leaseMs: 10_000, knownVersion: 2 }),
      );
      expect(lease2).toEqual({ acquired: true, version: 2, state: undefined });
      await run(
        other.commitTurn(ns, 'alice', {
          owner: 'b',
          version: 2,
          turn: { replace: { memory: [message('only')] } },
        }),
      );
      const after = await run(store.readSession(ns, 'alice'));
      expect(after?.state.memory).toEqual([message('only')]);
      expect(after?.state['writer.memory']).toEqual(first['writer.memory']);
    });

    it('gives the state back on acquire unless the caller holds that version', async () => {
      const ns = fresh('known');
      await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }));
      await run(
        store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } }),
      );
      const stale = await run(
        other.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000, knownVersion: 0 }),
      );
      expect(stale).toEqual({ acquired: true, version: 1, state: { memory: [message('1')] } });
      await run(other.releaseSession(ns, 's', 'b'));
    });

    it('leases: a held session is busy for others until released or expired', async () => {
      const ns = fresh('lease');
      // The lease's end is 10 s after its taking, which lies between these two readings of the machine's clock.
      const before = Date.now();
      expect((await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }))).acquired).toBe(true);
      const after = Date.now();
      const busy = await run(other.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000 }));
      expect(busy.acquired).toBe(false);
      if (!busy.acquired) {
        expect(busy.until).toBeGreaterThanOrEqual(before + 10_000 - 1);
        expect(busy.until).toBeLessThanOrEqual(after + 10_000 + 1);
      }
      // The owner may take it again (re-entry) and renew it.
      expect((await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }))).acquired).toBe(true);
      expect(await run(store.renewLease(ns, 's', 'a', 10_000))).toBe(true);
      expect(await run(other.renewLease(ns, 's', 'b', 10_000))).toBe(false);
      // Releasing someone else's lease does nothing.
      await run(other.releaseSession(ns, 's', 'b'));
      expect((await run(other.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000 }))).acquired).toBe(
        false,
      );
      await run(store.releaseSession(ns, 's', 'a'));
      expect((await run(other.acquireSession(ns, 's', { owner: 'b', leaseMs: 150 }))).acquired).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 250));
      // b's lease expired: a takes the session, and b can neither renew nor commit.
      expect((await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }))).acquired).toBe(true);
      expect(await run(other.renewLease(ns, 's', 'b', 10_000))).toBe(false);
      await expect(
        attempt(() =>
          other.commitTurn(ns, 's', {
            owner: 'b',
            version: 0,
            turn: { append: { memory: [message('late')] } },
          }),
        ),
      ).rejects.toBeInstanceOf(StoreConflictError);
      await run(
        store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('a')] } } }),
      );
      expect((await run(other.readSession(ns, 's')))?.state).toEqual({ memory: [message('a')] });
    });

    it('refuses a commit on a version the session has moved past, and changes nothing', async () => {
      const ns = fresh('cas');
      await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }));
      await run(
        store.commitTurn(ns, 's', {
          owner: 'a',
          version: 0,
          turn: { append: { memory: [message('1')] } },
          release: false,
        }),
      );
      const stale = attempt(() =>
        store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('x')] } } }),
      );
      await expect(stale).rejects.toBeInstanceOf(StoreConflictError);
      await expect(stale).rejects.toThrow(/version/);
      const read = await run(other.readSession(ns, 's'));
      expect(read?.version).toBe(1);
      expect(read?.state).toEqual({ memory: [message('1')] });
      await run(store.releaseSession(ns, 's', 'a'));
    });

    it('a commit without the lease is refused', async () => {
      const ns = fresh('nolease');
      await expect(
        attempt(() =>
          store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } }),
        ),
      ).rejects.toBeInstanceOf(StoreConflictError);
      expect(await run(store.readSession(ns, 's'))).toBeUndefined();
    });

    it('lists sessions in key order, a page at a time, and deletes them', async () => {
      const ns = fresh('list');
      const ids = ['b', 'a', 'c', 'ü', 'a b', '0'];
      // Every commit's time lies between this reading of the machine's clock and the listing.
      const before = Date.now();
      for (const id of ids) {
        await run(store.acquireSession(ns, id, { owner: 'a', leaseMs: 10_000 }));
        await run(
          store.commitTurn(ns, id, { owner: 'a', version: 0, turn: { append: { memory: [message(id)] } } }),
        );
      }
      // A leased session never committed is not listed.
      await run(store.acquireSession(ns, 'z', { owner: 'a', leaseMs: 10_000 }));
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await run(other.listSessions(ns, { limit: 4, after }));
        expect(page.sessions.length).toBeLessThanOrEqual(4);
        for (const session of page.sessions) {
          expect(session.version).toBe(1);
          expect(session.expiresAt).toBeNull();
          expect(session.updatedAt).toBeGreaterThanOrEqual(before - 1);
          expect(session.updatedAt).toBeLessThanOrEqual(Date.now() + 1);
        }
        seen.push(...page.sessions.map((session) => session.sessionId));
        if (page.next === undefined) break;
        after = page.next;
      }
      expect(seen).toEqual([...ids].sort());
      expect((await run(store.listSessions(fresh('empty')))).sessions).toEqual([]);

      expect(await run(other.deleteSession(ns, 'a'))).toBe(true);
      expect(await run(other.deleteSession(ns, 'a'))).toBe(false);
      expect(await run(store.readSession(ns, 'a'))).toBeUndefined();
      // A deleted session starts again at version 0.
      expect(
        await run(store.acquireSession(ns, 'a', { owner: 'a', leaseMs: 10_000, knownVersion: 1 })),
      ).toEqual({
        acquired: true,
        version: 0,
        state: {},
      });
    });

    it('expires sessions after ttlMs: not read, not listed, purged', async () => {
      const ns = fresh('ttl');
      const short = await h.open({ ttlMs: 200 });
      try {
        await run(short.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }));
        // The commit's time lies between these two readings of this machine's clock (every store's clock is
        // this machine's): the session expires ttlMs after it, however long the commit took.
        const before = Date.now();
        await run(
          short.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } }),
        );
        const after = Date.now();
        const read = await run(short.readSession(ns, 's'));
        expect(read?.expiresAt).toBeGreaterThanOrEqual(before + 200 - 1);
        expect(read?.expiresAt).toBeLessThanOrEqual(after + 200 + 1);
        await new Promise((resolve) => setTimeout(resolve, 350));
        expect(await run(short.readSession(ns, 's'))).toBeUndefined();
        expect((await run(short.listSessions(ns))).sessions).toEqual([]);
        expect(await run(short.purgeExpired(ns))).toBeGreaterThanOrEqual(0);
        expect((await run(short.acquireSession(ns, 's', { owner: 'b', leaseMs: 1000 }))).acquired).toBe(true);
      } finally {
        await run(short.close());
      }
    });

    it('keeps call journals: entries in order, finished or not, by session', async () => {
      const ns = fresh('journal');
      expect(await run(store.appendJournal(ns, 's1', 'call-1', { kind: 'model', text: '数学' }))).toBe(0);
      expect(await run(store.appendJournal(ns, 's1', 'call-1', { kind: 'tool', result: [1, 2] }))).toBe(1);
      await run(store.appendJournal(ns, 's1', 'call-2', { kind: 'model' }));
      await run(store.appendJournal(ns, 's2', 'call-3', { kind: 'model' }));
      expect(await run(other.readJournal(ns, 'call-1'))).toEqual({
        callId: 'call-1',
        sessionId: 's1',
        entries: [
          { seq: 0, data: { kind: 'model', text: '数学' } },
          { seq: 1, data: { kind: 'tool', result: [1, 2] } },
        ],
        finished: false,
      });
      expect(await run(other.listJournals(ns, 's1'))).toEqual(['call-1', 'call-2']);
      await run(other.finishJournal(ns, 'call-1'));
      expect((await run(store.readJournal(ns, 'call-1')))?.finished).toBe(true);
      expect(await run(store.listJournals(ns, 's1', { unfinished: true }))).toEqual(['call-2']);
      expect(await run(store.deleteJournal(ns, 'call-2'))).toBe(true);
      expect(await run(store.readJournal(ns, 'call-2'))).toBeUndefined();
      expect(await run(store.readJournal(ns, 'nope'))).toBeUndefined();
      // Deleting a session deletes its journals.
      await run(store.acquireSession(ns, 's2', { owner: 'a', leaseMs: 1000 }));
      await run(
        store.commitTurn(ns, 's2', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } }),
      );
      await run(store.deleteSession(ns, 's2'));
      expect(await run(store.readJournal(ns, 'call-3'))).toBeUndefined();
    });

    it('fences journal writes with the lease: refused once another owner took it, also after the old one takes it again', async () => {
      const ns = fresh('fence');
      await run(store.acquireSession(ns, 's', { owner: 'a1', leaseMs: 10_000 }));
      const a1 = { owner: 'a1', leaseMs: 10_000 };
      expect(await run(store.appendJournal(ns, 's', 'c', { step: 0 }, a1))).toBe(0);
      // Without the lease (never taken by this owner, or released): refused, nothing written.
      await expect(
        attempt(() => other.appendJournal(ns, 's', 'c', { step: 'x' }, { owner: 'b', leaseMs: 1000 })),
      ).rejects.toBeInstanceOf(StoreConflictError);
      await expect(
        attempt(() => other.appendJournal(ns, 'never', 'c2', { step: 'x' }, { owner: 'b', leaseMs: 1000 })),
      ).rejects.toThrow(/no longer leased to this caller.*journal entry was not written/);
      expect(await run(other.readJournal(ns, 'c2'))).toBeUndefined();
      await run(store.releaseSession(ns, 's', 'a1'));
      await expect(
        attempt(() => store.appendJournal(ns, 's', 'c', { step: 'late' }, a1)),
      ).rejects.toBeInstanceOf(StoreConflictError);
      // Another owner takes the session: the first one's writes are refused, even once it holds the session
      // again under a new acquisition.
      await run(other.acquireSession(ns, 's', { owner: 'b1', leaseMs: 10_000 }));
      expect(
        await run(other.appendJournal(ns, 's', 'c', { step: 1 }, { owner: 'b1', leaseMs: 10_000 })),
      ).toBe(1);
      await run(other.releaseSession(ns, 's', 'b1'));
      await run(store.acquireSession(ns, 's', { owner: 'a2', leaseMs: 10_000 }));
      await expect(
        attempt(() => store.appendJournal(ns, 's', 'c', { step: 'stale' }, a1)),
      ).rejects.toBeInstanceOf(StoreConflictError);
      await expect(
        attempt(() => store.finishJournal(ns, 'c', { fence: a1, entry: { end: 'stale' } })),
      ).rejects.toBeInstanceOf(StoreConflictError);
      const journal = await run(other.readJournal(ns, 'c'));
      expect(journal?.entries.map((entry) => entry.data)).toEqual([{ step: 0 }, { step: 1 }]);
      expect(journal?.finished).toBe(false);
      await run(
        store.finishJournal(ns, 'c', { fence: { owner: 'a2', leaseMs: 10_000 }, entry: { end: 'ok' } }),
      );
      expect((await run(other.readJournal(ns, 'c')))?.entries.at(-1)?.data).toEqual({ end: 'ok' });
      await run(store.releaseSession(ns, 's', 'a2'));
    });

    it("a lease that ran out with nobody taking it is still the holder's: it writes, renews and commits", async () => {
      const ns = fresh('ranout');
      await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 50 }));
      await new Promise((resolve) => setTimeout(resolve, 120));
      const fence = { owner: 'a', leaseMs: 50 };
      expect(await run(store.appendJournal(ns, 's', 'c', { step: 0 }, fence))).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(await run(store.renewLease(ns, 's', 'a', 50))).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(
        await run(
          store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } }),
        ),
      ).toBe(1);
      // Once another owner took it (it ran out), the first one can neither renew nor write.
      await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 50 }));
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect((await run(other.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000 }))).acquired).toBe(true);
      expect(await run(store.renewLease(ns, 's', 'a', 10_000))).toBe(false);
      await expect(
        attempt(() => store.appendJournal(ns, 's', 'c', { step: 1 }, fence)),
      ).rejects.toBeInstanceOf(StoreConflictError);
      await run(other.releaseSession(ns, 's', 'b'));
    });

    it('a commit tried again with its turnId writes nothing twice, and releases the lease when asked', async () => {
      const ns = fresh('turnid');
      await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }));
      const turn = { append: { memory: [message('once')] } };
      const options = { owner: 'a', version: 0, turn, turnId: 't-1', release: false };
      expect(await run(store.commitTurn(ns, 's', options))).toBe(1);
      // The answer was lost: the same commit again gives the version it made.
      expect(await run(store.commitTurn(ns, 's', { ...options, release: true }))).toBe(1);
      expect((await run(other.readSession(ns, 's')))?.state).toEqual({ memory: [message('once')] });
      expect((await run(other.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000 }))).acquired).toBe(true);
      // Another turn id at the old version is a conflict as before.
      await expect(
        attempt(() => other.commitTurn(ns, 's', { ...options, owner: 'b', turnId: 't-2' })),
      ).rejects.toThrow(/version 1, not 0/);
      await run(other.releaseSession(ns, 's', 'b'));
    });

    it('keeps finished journals for their retention: then reads miss them and purgeExpired prunes them', async () => {
      const ns = fresh('retain');
      await run(store.appendJournal(ns, 's', 'kept', { step: 0 }));
      await run(store.finishJournal(ns, 'kept', { retainMs: 60_000, entry: { end: 'done' } }));
      await run(store.appendJournal(ns, 's', 'short', { step: 0 }));
      await run(store.finishJournal(ns, 'short', { retainMs: 0 }));
      await run(store.appendJournal(ns, 's', 'open', { step: 0 }));
      expect(await run(other.readJournal(ns, 'short'))).toBeUndefined();
      expect(await run(other.listJournals(ns, 's'))).toEqual(['kept', 'open']);
      expect(await run(other.readJournal(ns, 'kept'))).toEqual({
        callId: 'kept',
        sessionId: 's',
        entries: [
          { seq: 0, data: { step: 0 } },
          { seq: 1, data: { end: 'done' } },
        ],
        finished: true,
      });
      await run(other.purgeExpired(ns));
      expect(await run(other.deleteJournal(ns, 'short'))).toBe(false);
      // An entry after the finish reopens a journal (a failed call tried again), and keeps it.
      expect(await run(store.appendJournal(ns, 's', 'kept', { step: 'again' }))).toBe(2);
      expect((await run(other.readJournal(ns, 'kept')))?.finished).toBe(false);
      expect(await run(other.listJournals(ns, 's', { unfinished: true }))).toEqual(['kept', 'open']);
      // A journal of the same id on the session starts again once the old one was pruned.
      await run(store.appendJournal(ns, 's', 'short', { step: 'new' }));
      expect((await run(other.readJournal(ns, 'short')))?.entries).toEqual([
        { seq: 0, data: { step: 'new' } },
      ]);
    });

    it("refuses a journal write naming a call of another session, and lists a namespace's unfinished calls", async () => {
      const ns = fresh('calls');
      await run(store.appendJournal(ns, 'a', 'call-1', { step: 0 }));
      await expect(attempt(() => other.appendJournal(ns, 'b', 'call-1', { step: 'x' }))).rejects.toThrow(
        /belongs to another session/,
      );
      expect((await run(other.readJournal(ns, 'call-1')))?.entries).toHaveLength(1);
      await run(store.appendJournal(ns, 'b', 'call-3', { step: 0 }));
      await run(store.appendJournal(ns, 'b', 'call-2', { step: 0 }));
      await run(store.appendJournal(ns, 'c', 'call-4', { step: 0 }));
      await run(store.finishJournal(ns, 'call-4'));
      await run(store.appendJournal(fresh('elsewhere'), 'a', 'call-0', { step: 0 }));
      const list = other.listUnfinishedCalls!.bind(other);
      const first = await run(list(ns, { limit: 2 }));
      expect(first).toEqual({
        calls: [
          { callId: 'call-1', sessionId: 'a' },
          { callId: 'call-2', sessionId: 'b' },
        ],
        next: 'call-2',
      });
      expect(await run(list(ns, { after: first.next, limit: 2 }))).toEqual({
        calls: [{ callId: 'call-3', sessionId: 'b' }],
      });
    });

    it('a session that expires during a call: its commit and fenced writes say it expired', async () => {
      const ns = fresh('expiring');
      const short = await h.open({ ttlMs: 150 });
      try {
        await run(short.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }));
        await run(
          short.commitTurn(ns, 's', {
            owner: 'a',
            version: 0,
            turn: { append: { memory: [message('1')] } },
            release: false,
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        await expect(
          attempt(() =>
            short.commitTurn(ns, 's', {
              owner: 'a',
              version: 1,
              turn: { append: { memory: [message('2')] } },
            }),
          ),
        ).rejects.toThrow(/expired \(its ttlMs passed\) during the call; the turn was not committed/);
        await run(short.acquireSession(ns, 't', { owner: 'a', leaseMs: 10_000 }));
        await run(
          short.commitTurn(ns, 't', {
            owner: 'a',
            version: 0,
            turn: { append: { memory: [message('1')] } },
            release: false,
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        await expect(
          attempt(() => short.appendJournal(ns, 't', 'c', { step: 0 }, { owner: 'a', leaseMs: 10_000 })),
        ).rejects.toThrow(/expired \(its ttlMs passed\) during the call; the journal entry was not written/);
      } finally {
        await run(short.close());
      }
    });

    it('stores keys with NUL characters and lone surrogates exactly, apart from others', async () => {
      const ns = fresh('odd\u0000keys');
      const ids = ['a\u0000b', 'a', '\ud800', '\udfff-x', '\ud83d\ude00'];
      for (const [i, id] of ids.entries()) {
        await run(store.acquireSession(ns, id, { owner: 'a', leaseMs: 10_000 }));
        await run(
          store.commitTurn(ns, id, {
            owner: 'a',
            version: 0,
            turn: { append: { memory: [message(String(i))] } },
          }),
        );
        await run(store.appendJournal(ns, id, `call\u0000${id}`, { i }));
      }
      for (const [i, id] of ids.entries()) {
        expect((await run(other.readSession(ns, id)))?.state.memory).toEqual([message(String(i))]);
        expect((await run(other.readJournal(ns, `call\u0000${id}`)))?.sessionId).toBe(id);
        expect(await run(other.listJournals(ns, id))).toEqual([`call\u0000${id}`]);
      }
      const listed = (await run(other.listSessions(ns))).sessions.map((session) => session.sessionId);
      expect([...listed].sort()).toEqual([...ids].sort());
      const calls = (await run(other.listUnfinishedCalls!(ns))).calls.map((call) => call.sessionId);
      expect([...calls].sort()).toEqual([...ids].sort());
    });

    it('refuses keys that are empty or longer than 1,024 characters with a StoreError', async () => {
      await expect(attempt(() => store.readSession('', 's'))).rejects.toBeInstanceOf(StoreError);
      await expect(attempt(() => store.readSession('ns', 'x'.repeat(1025)))).rejects.toBeInstanceOf(
        StoreError,
      );
      expect(await run(store.readSession('ns', 'x'.repeat(1024)))).toBeUndefined();
    });

    it('names the session of a stored value it cannot read; other sessions stay readable', async () => {
      if (!h.corrupt) return;
      const ns = fresh('corrupt');
      for (const id of ['good', 'bad']) {
        await run(store.acquireSession(ns, id, { owner: 'a', leaseMs: 10_000 }));
        await run(
          store.commitTurn(ns, id, { owner: 'a', version: 0, turn: { append: { memory: [message(id)] } } }),
        );
      }
      await h.corrupt(ns, 'bad');
      const read = attempt(() => store.readSession(ns, 'bad'));
      await expect(read).rejects.toBeInstanceOf(StoreError);
      await expect(read).rejects.toThrow(/"bad"/);
      await expect(
        attempt(() => store.acquireSession(ns, 'bad', { owner: 'b', leaseMs: 1000 })),
      ).rejects.toThrow(/"bad"/);
      expect((await run(store.readSession(ns, 'good')))?.state).toEqual({ memory: [message('good')] });
    });

    it('fails with a StoreError while its server is down, and works again when it is back', async () => {
      if (!h.stopServer || !h.restartServer) return;
      const ns = fresh('down');
      await run(store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 }));
      await run(
        store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } }),
      );
      await h.stopServer();
      try {
        const failed = attempt(() => store.readSession(ns, 's'));
        await expect(failed).rejects.toBeInstanceOf(StoreError);
        await expect(failed).rejects.toThrow(/readSession/);
      } finally {
        await h.restartServer();
      }
      expect((await run(store.readSession(ns, 's')))?.state).toEqual({ memory: [message('1')] });
    }, 60_000);

    it('refuses every call once closed', async () => {
      const closing = await h.open();
      await run(closing.close());
      await run(closing.close());
      await expect(attempt(() => closing.readSession('ns', 's'))).rejects.toBeInstanceOf(StoreError);
    });

    it('an agent on it: committed turns only; a failed call leaves the store exactly as before', async () => {
      const namespace = fresh('agent');
      let fail = false;
      const agent = new AsyncAgent({
        llm: new AsyncMockLLM({
          responses: (messages) => {
            if (fail) throw new Error('model down');
            return `reply to ${String(messages.at(-1)?.content)}`;
          },
        }),
        memory: { store, namespace },
      });
      await agent.call('数学 🚀', { sessionId: 'a' });
      const before = await run(other.readSession(namespace, 'a'));
      fail = true;
      await expect(agent.call('lost', { sessionId: 'a' })).rejects.toThrow('model down');
      expect(await run(other.readSession(namespace, 'a'))).toEqual(before);
      fail = false;
      // Another agent on the other store (another process) continues the session.
      const next = new AsyncAgent({
        llm: new AsyncMockLLM({ responses: (messages) => `saw ${messages.length}` }),
        memory: { store: other, namespace },
      });
      expect((await next.call('next', { sessionId: 'a' })).content).toBe('saw 3');
      const after = await run(store.readSession(namespace, 'a'));
      expect(after?.version).toBe(2);
      expect(after?.state.memory?.map((m) => m.content)).toEqual([
        '数学 🚀',
        'reply to 数学 🚀',
        'next',
        'saw 3',
      ]);
    });

    describe('run logs', () => {
      let log: SessionStore & RunLogStore;
      let peer: SessionStore & RunLogStore;
      const event = (type: string, data: unknown) => ({ type, data: JSON.stringify(data) });
      const write = (ns: string, runId: string, extra: Partial<RunWrite> = {}): RunWrite => ({
        namespace: ns,
        runId,
        events: [],
        ttlMs: 60_000,
        ...extra,
      });

      beforeAll(() => {
        log = runLogOf(store)!;
        peer = runLogOf(other)!;
        expect(log).toBeDefined();
      });

      it('appends numbered events and reads them from any number on, with the status and result', async () => {
        const ns = fresh('runs');
        const created = await run(log.createRun(ns, 'r1', { sessionId: 's', ttlMs: 60_000 }));
        expect(created.created).toBe(true);
        expect(created.run).toMatchObject({ runId: 'r1', sessionId: 's', status: 'queued', lastSeq: 0 });
        expect(created.run.result).toBeUndefined();
        const big = 'x'.repeat(1024 * 1024);
        const [first] = await run(
          log.appendRuns([
            write(ns, 'r1', {
              events: [event('chunk', { content: '数学 😀' }), event('delta', { content: big })],
              status: 'running',
            }),
          ]),
        );
        expect(first).toEqual({ lastSeq: 2, cancelRequested: false });
        await run(
          log.appendRuns([
            write(ns, 'r1', {
              events: [event('message', { content: 'done' })],
              status: 'done',
              result: '{"reply":1}',
            }),
          ]),
        );
        const page = await run(peer.readRunEvents(ns, 'r1', 0));
        expect(page?.run).toMatchObject({ status: 'done', lastSeq: 3, result: '{"reply":1}' });
        expect(page?.events.map((e) => [e.seq, e.type])).toEqual([
          [1, 'chunk'],
          [2, 'delta'],
          [3, 'message'],
        ]);
        expect(JSON.parse(page!.events[0]!.data)).toEqual({ content: '数学 😀' });
        expect(JSON.parse(page!.events[1]!.data).content).toHaveLength(big.length);
        expect((await run(peer.readRunEvents(ns, 'r1', 2)))?.events.map((e) => e.seq)).toEqual([3]);
        expect((await run(peer.readRunEvents(ns, 'r1', 0, 2)))?.events.map((e) => e.seq)).toEqual([1, 2]);
        // Past the end: the run, no events.
        expect((await run(peer.readRunEvents(ns, 'r1', 9)))?.events).toEqual([]);
        expect(await run(peer.readRunEvents(ns, 'nope', 0))).toBeUndefined();
        expect(await run(peer.readRun(ns, 'nope'))).toBeUndefined();
        // A status written without a result clears the one it had.
        await run(log.appendRuns([write(ns, 'r1', { status: 'running' })]));
        expect((await run(peer.readRun(ns, 'r1')))?.result).toBeUndefined();
        // Created again: found, left as it is.
        const again = await run(peer.createRun(ns, 'r1', { sessionId: 'other', ttlMs: 1000 }));
        expect(again.created).toBe(false);
        expect(again.run).toMatchObject({ sessionId: 's', lastSeq: 3, status: 'running' });
      });

      it('writes several runs at once; a run that is gone is written nothing', async () => {
        const ns = fresh('runs-batch');
        await run(log.createRun(ns, 'a', { sessionId: 's', ttlMs: 60_000, status: 'running' }));
        await run(log.createRun(ns, 'b', { sessionId: 's', ttlMs: 60_000, status: 'running' }));
        const written = await run(
          log.appendRuns([
            write(ns, 'a', { events: [event('chunk', 1), event('chunk', 2)] }),
            write(ns, 'gone', { events: [event('chunk', 1)] }),
            write(ns, 'b', { events: [event('chunk', 3)] }),
            write(ns, 'a', { events: [event('chunk', 4)] }),
          ]),
        );
        expect(written.map((w) => w.lastSeq)).toEqual([2, -1, 1, 3]);
        expect(await run(peer.readRun(ns, 'gone'))).toBeUndefined();
        const a = await run(peer.readRunEvents(ns, 'a', 0));
        expect(a?.events.map((e) => JSON.parse(e.data))).toEqual([1, 2, 4]);
      });

      it("lists a session's runs oldest or newest first, a page at a time", async () => {
        const ns = fresh('runs-list');
        for (const id of ['r-c', 'r-a', 'r-b'])
          await run(log.createRun(ns, id, { sessionId: 's', ttlMs: 60_000 }));
        await run(log.createRun(ns, 'r-x', { sessionId: 't', ttlMs: 60_000 }));
        const first = await run(peer.listRuns(ns, 's', { limit: 2 }));
        expect(first.runs.map((r) => r.runId)).toEqual(['r-c', 'r-a']);
        expect(first.next).toBe('r-a');
        expect((await run(peer.listRuns(ns, 's', { after: first.next }))).runs.map((r) => r.runId)).toEqual([
          'r-b',
        ]);
        expect((await run(peer.listRuns(ns, 's', { newestFirst: true }))).runs.map((r) => r.runId)).toEqual([
          'r-b',
          'r-a',
          'r-c',
        ]);
        const newest = await run(peer.listRuns(ns, 's', { newestFirst: true, limit: 1 }));
        expect(newest.runs.map((r) => r.runId)).toEqual(['r-b']);
        expect(
          (await run(peer.listRuns(ns, 's', { newestFirst: true, after: newest.next }))).runs.map(
            (r) => r.runId,
          ),
        ).toEqual(['r-a', 'r-c']);
        expect((await run(peer.listRuns(ns, 'none'))).runs).toEqual([]);
        expect(await run(log.deleteRun(ns, 'r-a'))).toBe(true);
        expect(await run(log.deleteRun(ns, 'r-a'))).toBe(false);
        expect((await run(peer.listRuns(ns, 's'))).runs.map((r) => r.runId)).toEqual(['r-c', 'r-b']);
      });

      it('cancels: a running run is marked for its writer, a waiting one is cancelled, an ended one is left', async () => {
        const ns = fresh('runs-cancel');
        await run(log.createRun(ns, 'running', { sessionId: 's', ttlMs: 60_000, status: 'running' }));
        await run(log.createRun(ns, 'waiting', { sessionId: 's', ttlMs: 60_000, status: 'waiting' }));
        await run(log.createRun(ns, 'done', { sessionId: 's', ttlMs: 60_000, status: 'done' }));
        expect((await run(peer.cancelRun(ns, 'running')))?.cancelRequested).toBe(true);
        const [seen] = await run(log.appendRuns([write(ns, 'running', { events: [event('chunk', 1)] })]));
        expect(seen).toEqual({ lastSeq: 1, cancelRequested: true });
        expect((await run(peer.cancelRun(ns, 'waiting')))?.status).toBe('cancelled');
        expect(await run(peer.cancelRun(ns, 'done'))).toMatchObject({
          status: 'done',
          cancelRequested: false,
        });
        expect(await run(peer.cancelRun(ns, 'nope'))).toBeUndefined();
      });

      it('tells watchers of a run about writes, also those made through another store object', async () => {
        const ns = fresh('runs-watch');
        await run(log.createRun(ns, 'w', { sessionId: 's', ttlMs: 60_000, status: 'running' }));
        let told = 0;
        let wake: () => void = () => {};
        const stop = log.watchRun(ns, 'w', () => {
          told++;
          wake();
        });
        try {
          // Heard once the store hears other objects' writes (a store that starts hearing them late calls
          // every watcher then, and the reader reads again): from then on, each write is heard.
          const heard = new Promise<void>((resolve) => (wake = resolve));
          await run(peer.appendRuns([write(ns, 'w', { events: [event('chunk', 1)] })]));
          await heard;
          expect(told).toBeGreaterThan(0);
          const cancelled = new Promise<void>((resolve) => (wake = resolve));
          await run(peer.cancelRun(ns, 'w'));
          await cancelled;
        } finally {
          stop();
        }
        // Stopped: no more calls.
        const before = told;
        await run(log.appendRuns([write(ns, 'w', { events: [event('chunk', 2)] })]));
        expect(told).toBe(before);
      });

      it('drops a run past its time to live; a write sets how long it is kept from then on', async () => {
        const ns = fresh('runs-ttl');
        await run(log.createRun(ns, 'short', { sessionId: 's', ttlMs: 150 }));
        await run(log.createRun(ns, 'kept', { sessionId: 's', ttlMs: 150 }));
        // Written with a longer time to live (a run that ended and is retained): kept.
        await run(log.appendRuns([write(ns, 'kept', { status: 'done', ttlMs: 60_000 })]));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(await run(peer.readRun(ns, 'short'))).toBeUndefined();
        expect(await run(peer.readRunEvents(ns, 'short', 0))).toBeUndefined();
        expect((await run(peer.listRuns(ns, 's'))).runs.map((r) => r.runId)).toEqual(['kept']);
        expect(
          (await run(log.appendRuns([write(ns, 'short', { events: [event('chunk', 1)] })])))[0]!.lastSeq,
        ).toBe(-1);
        await run(peer.purgeExpired(ns));
        expect(await run(log.deleteRun(ns, 'short'))).toBe(false);
        const kept = await run(peer.readRun(ns, 'kept'));
        expect(kept?.status).toBe('done');
        expect(kept!.expiresAt).toBeGreaterThan(Date.now() + 50_000);
        // A run of the same id starts afresh once the old one is gone.
        expect((await run(log.createRun(ns, 'short', { sessionId: 's2', ttlMs: 60_000 }))).created).toBe(
          true,
        );
      });

      it('keeps run and session ids with NUL characters and lone surrogates exactly', async () => {
        const ns = fresh('runs\u0000odd');
        const ids = ['a\u0000b', '\ud800', '\udfff-x', '\ud83d\ude00'];
        for (const id of ids) {
          await run(log.createRun(ns, `run-${id}`, { sessionId: id, ttlMs: 60_000 }));
          await run(log.appendRuns([write(ns, `run-${id}`, { events: [event('chunk', id)] })]));
        }
        for (const id of ids) {
          const page = await run(peer.readRunEvents(ns, `run-${id}`, 0));
          expect(page?.run.sessionId).toBe(id);
          expect(JSON.parse(page!.events[0]!.data)).toBe(id);
          expect((await run(peer.listRuns(ns, id))).runs.map((r) => r.runId)).toEqual([`run-${id}`]);
        }
      });

      it('refuses bad input with a StoreError and writes nothing', async () => {
        const ns = fresh('runs-bad');
        await run(log.createRun(ns, 'r', { sessionId: 's', ttlMs: 60_000 }));
        const refused: (() => unknown)[] = [
          () => log.createRun(ns, 'x', { sessionId: 's', ttlMs: 0 }),
          () => log.createRun(ns, 'x', { sessionId: '', ttlMs: 10 }),
          () => log.createRun(ns, 'x', { sessionId: 's', ttlMs: 10, status: 'sleeping' as never }),
          () => log.appendRuns([write(ns, 'r', { status: 'bad' as never })]),
          () => log.appendRuns([write(ns, 'r', { events: [{ type: '', data: '1' }] })]),
          () => log.appendRuns([write(ns, 'r', { events: [{ type: 'chunk', data: 1 as never }] })]),
          () => log.appendRuns([write(ns, 'r', { ttlMs: -1 })]),
          () => log.readRunEvents(ns, 'r', -1),
          () => log.readRunEvents(ns, 'r', 1.5),
          () => log.readRunEvents(ns, 'r', 0, 0),
          () => log.readRun(ns, 'x'.repeat(1025)),
        ];
        for (const call of refused) await expect(attempt(call)).rejects.toBeInstanceOf(StoreError);
        expect(await run(peer.readRun(ns, 'x'))).toBeUndefined();
        expect((await run(peer.readRun(ns, 'r')))?.lastSeq).toBe(0);
      });
    });

    it('an agent whose store server stops mid-call fails with a StoreError and writes nothing', async () => {
      if (!h.stopServer || !h.restartServer) return;
      const namespace = fresh('agent-down');
      const agent = new AsyncAgent({
        llm: new AsyncMockLLM({ responses: ['answer'], latencyMs: 400 }),
        memory: { store, namespace },
      });
      const call = agent.call('question', { sessionId: 's' });
      // The model is answering: the server goes away before the turn is committed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await h.stopServer();
      try {
        await expect(call).rejects.toBeInstanceOf(StoreError);
        expect(agent.stateDict('s').memory).toEqual([]);
      } finally {
        await h.restartServer();
      }
      expect(await run(store.readSession(namespace, 's'))).toBeUndefined();
    }, 60_000);
  });
}
