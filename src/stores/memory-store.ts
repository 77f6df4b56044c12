import { ConfigurationError, StoreError } from '../schema/errors';
import { checkRunRange, checkRunStatus, checkRunTtl, checkRunWrite, RunWatchers } from './run-log';
import {
  type AcquiredSession,
  type AcquireOptions,
  applyTurn,
  type BusySession,
  type CommitOptions,
  type CreatedRun,
  type CreateRunOptions,
  checkRetain,
  checkStoreKey,
  commitConflict,
  type FinishJournalOptions,
  fenceConflict,
  type JournalFence,
  type ListOptions,
  PRUNE_BATCH,
  type RunEventPage,
  type RunListOptions,
  type RunLogStore,
  type RunPage,
  type RunRecord,
  type RunStatus,
  type RunWrite,
  type RunWritten,
  runEnded,
  type SessionInfo,
  type SessionPage,
  type StoredJournal,
  type StoredSession,
  type StoredState,
  type StoreOptions,
  type SyncSessionStore,
  type UnfinishedCall,
  type UnfinishedCallPage,
} from './types';

interface Session {
  version: number;
  state: StoredState;
  updatedAt: number;
  expiresAt: number | null;
  leaseOwner: string | undefined;
  leaseUntil: number;
  /** The `turnId` of the last committed turn, if it had one. */
  lastTurnId: string | undefined;
}

interface Run {
  sessionId: string;
  status: RunStatus;
  /** The events' types and JSON texts, by seq - 1. */
  types: string[];
  data: string[];
  createdAt: number;
  updatedAt: number;
  result: string | undefined;
  cancelRequested: boolean;
  expiresAt: number;
  ttlMs: number;
}

interface Journal {
  sessionId: string;
  /** Each entry's data as JSON text: copied once when written, parsed when read (replays only). */
  entries: string[];
  finished: boolean;
  /** When a finished journal's retention ends (epoch ms), or null for never. */
  expiresAt: number | null;
}

/**
 * The in-process store: sessions and journals in maps, as JSON copies (what is read back never shares objects
 * with what was written). It lives as long as the process, so it persists nothing across restarts; it is
 * what tests and single-process apps use, and the reference the other stores are checked against. Its
 * clock (leases, expiry, retention) is `clock`, `Date.now` by default: tests give one they move.
 *
 * @example
 * const store = new MemoryStore();
 * const agent = new AsyncAgent({ llm, memory: { store } });
 * await agent.call('hi', { sessionId: 'alice' });
 * store.readSession('AsyncAgent', 'alice')?.state.memory.length; // 2
 */
export class MemoryStore implements SyncSessionStore, RunLogStore {
  readonly synchronous = true as const;
  readonly description = 'MemoryStore';
  readonly ttlMs: number | undefined;
  readonly #sessions = new Map<string, Map<string, Session>>();
  readonly #journals = new Map<string, Map<string, Journal>>();
  /** Per namespace and session, its journals' call ids, oldest first (listing them reads no others). */
  readonly #sessionJournals = new Map<string, Map<string, Set<string>>>();
  /** Per namespace, finished journals with a retention, in the order they were finished: pruned from the front. */
  readonly #retained = new Map<string, Map<string, number>>();
  readonly #runs = new Map<string, Map<string, Run>>();
  /** Per namespace and session, its run ids, oldest first. */
  readonly #sessionRuns = new Map<string, Map<string, Set<string>>>();
  /**
   * Per namespace and time to live, its runs in the order they were last written (so in the order they expire):
   * pruned from the front.
   */
  readonly #runExpiry = new Map<string, Map<number, Map<string, number>>>();
  readonly #runWatchers = new RunWatchers();
  readonly watchesOtherProcesses = false;
  readonly #now: () => number;
  #closed = false;

  constructor(options: StoreOptions & { clock?: (() => number) | undefined } = {}) {
    this.ttlMs = checkTtl(options.ttlMs);
    const clock = options.clock;
    if (clock !== undefined && typeof clock !== 'function') {
      throw new ConfigurationError({ message: 'MemoryStore: clock must be a function returning epoch ms' });
    }
    this.#now = clock ?? now;
  }

  acquireSession(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): AcquiredSession | BusySession {
    const now = this.#now();
    const session = this.#live(namespace, sessionId, 'acquireSession', now);
    if (session === undefined) {
      // A lease on a session the store does not have yet: a placeholder at version 0.
      const created: Session = {
        version: 0,
        state: {},
        updatedAt: now,
        expiresAt: null,
        leaseOwner: options.owner,
        leaseUntil: now + options.leaseMs,
        lastTurnId: undefined,
      };
      this.#namespace(namespace).set(sessionId, created);
      return { acquired: true, version: 0, state: options.knownVersion === 0 ? undefined : {} };
    }
    if (
      session.leaseOwner !== undefined &&
      session.leaseOwner !== options.owner &&
      session.leaseUntil > now
    ) {
      return { acquired: false, until: session.leaseUntil };
    }
    session.leaseOwner = options.owner;
    session.leaseUntil = now + options.leaseMs;
    return {
      acquired: true,
      version: session.version,
      state: options.knownVersion === session.version ? undefined : copy(session.state),
    };
  }

  renewLease(namespace: string, sessionId: string, owner: string, leaseMs: number): boolean {
    const now = this.#now();
    const session = this.#live(namespace, sessionId, 'renewLease', now);
    // A lease that ran out with nobody taking it is still the owner's.
    if (session === undefined || session.leaseOwner !== owner) return false;
    session.leaseUntil = now + leaseMs;
    return true;
  }

  releaseSession(namespace: string, sessionId: string, owner: string): void {
    const session = this.#live(namespace, sessionId, 'releaseSession', this.#now());
    if (session === undefined || session.leaseOwner !== owner) return;
    session.leaseOwner = undefined;
    session.leaseUntil = 0;
    if (session.version === 0) this.#sessions.get(namespace)?.delete(sessionId);
  }

  commitTurn(namespace: string, sessionId: string, options: CommitOptions): number {
    const now = this.#now();
    const existed = this.#sessions.get(namespace)?.has(sessionId) === true;
    const session = this.#live(namespace, sessionId, 'commitTurn', now);
    if (options.turnId !== undefined && session?.lastTurnId === options.turnId) {
      // Committed already: the answer to the first try was lost.
      if (options.release !== false && session.leaseOwner === options.owner) {
        session.leaseOwner = undefined;
        session.leaseUntil = 0;
      }
      return session.version;
    }
    if (session === undefined || session.leaseOwner !== options.owner) {
      const reason = session === undefined && existed ? 'expired' : 'lease';
      throw commitConflict(this.description, namespace, sessionId, options.version, { reason });
    }
    if (session.version !== options.version) {
      throw commitConflict(this.description, namespace, sessionId, options.version, {
        reason: 'version',
        actual: session.version,
      });
    }
    // Copied first: a turn that cannot be stored as JSON changes nothing.
    const turn = copy(options.turn);
    session.state = applyTurn(session.state, turn);
    session.version += 1;
    session.lastTurnId = options.turnId;
    session.updatedAt = now;
    session.expiresAt = this.ttlMs === undefined ? null : now + this.ttlMs;
    if (options.release !== false) {
      session.leaseOwner = undefined;
      session.leaseUntil = 0;
    }
    return session.version;
  }

  readSession(namespace: string, sessionId: string): StoredSession | undefined {
    const session = this.#live(namespace, sessionId, 'readSession', this.#now());
    if (session === undefined || session.version === 0) return undefined;
    return { ...info(sessionId, session), state: copy(session.state) };
  }

  listSessions(namespace: string, options: ListOptions = {}): SessionPage {
    this.#open('listSessions');
    const limit = checkLimit(options.limit);
    const now = this.#now();
    const keys = [...(this.#sessions.get(namespace)?.keys() ?? [])].sort();
    const sessions: SessionInfo[] = [];
    for (const key of keys) {
      if (options.after !== undefined && key <= options.after) continue;
      const session = this.#sessions.get(namespace)!.get(key)!;
      if (session.version === 0 || expired(session, now)) continue;
      if (sessions.length === limit) return { sessions, next: sessions.at(-1)!.sessionId };
      sessions.push(info(key, session));
    }
    return { sessions };
  }

  deleteSession(namespace: string, sessionId: string): boolean {
    const session = this.#live(namespace, sessionId, 'deleteSession', this.#now());
    this.#delete(namespace, sessionId);
    return session !== undefined && session.version > 0;
  }

  purgeExpired(namespace?: string): number {
    this.#open('purgeExpired');
    const now = this.#now();
    let purged = 0;
    for (const [name, sessions] of this.#sessions) {
      if (namespace !== undefined && name !== namespace) continue;
      for (const [key, session] of sessions) {
        if (expired(session, now)) {
          this.#delete(name, key);
          purged++;
        }
      }
    }
    for (const name of this.#retained.keys()) {
      if (namespace === undefined || name === namespace) this.#prune(name, now, Number.POSITIVE_INFINITY);
    }
    for (const name of [...this.#runExpiry.keys()]) {
      if (namespace === undefined || name === namespace) this.#pruneRuns(name, now, Number.POSITIVE_INFINITY);
    }
    return purged;
  }

  appendJournal(
    namespace: string,
    sessionId: string,
    callId: string,
    data: unknown,
    fence?: JournalFence,
  ): number {
    this.#checkKeys('appendJournal', namespace, sessionId, callId);
    let journals = this.#journals.get(namespace);
    if (journals === undefined) {
      journals = new Map();
      this.#journals.set(namespace, journals);
    }
    let journal = journals.get(callId);
    const now = this.#now();
    if (journal !== undefined && journal.sessionId !== sessionId) {
      throw otherSession(this.description, 'appendJournal', namespace, callId);
    }
    if (fence !== undefined) this.#fenced(namespace, sessionId, fence, 'appendJournal', now);
    const json = JSON.stringify(data) ?? 'null';
    if (journal === undefined || this.#gone(journal, now)) {
      if (journal !== undefined) this.#deleteJournal(namespace, callId, journal);
      this.#prune(namespace, now, PRUNE_BATCH);
      journal = { sessionId, entries: [], finished: false, expiresAt: null };
      journals.set(callId, journal);
      this.#callIdsOf(namespace, sessionId, true)!.add(callId);
    } else if (journal.finished) {
      // An entry after the finish reopens the journal (a failed call tried again).
      journal.finished = false;
      journal.expiresAt = null;
      this.#retained.get(namespace)?.delete(callId);
    }
    const seq = journal.entries.length;
    journal.entries.push(json);
    return seq;
  }

  readJournal(namespace: string, callId: string): StoredJournal | undefined {
    this.#checkKeys('readJournal', namespace, callId);
    const journal = this.#journals.get(namespace)?.get(callId);
    if (journal === undefined || this.#gone(journal, this.#now())) return undefined;
    return {
      callId,
      sessionId: journal.sessionId,
      entries: journal.entries.map((json, seq) => ({ seq, data: JSON.parse(json) as unknown })),
      finished: journal.finished,
    };
  }

  finishJournal(namespace: string, callId: string, options: FinishJournalOptions = {}): void {
    this.#checkKeys('finishJournal', namespace, callId);
    const retainMs = checkRetain(this.description, options.retainMs);
    const journal = this.#journals.get(namespace)?.get(callId);
    const now = this.#now();
    if (journal === undefined || this.#gone(journal, now)) return;
    if (options.fence !== undefined)
      this.#fenced(namespace, journal.sessionId, options.fence, 'finishJournal', now);
    if (options.entry !== undefined) journal.entries.push(JSON.stringify(options.entry) ?? 'null');
    journal.finished = true;
    journal.expiresAt = retainMs === undefined ? null : now + retainMs;
    if (retainMs !== undefined) {
      let retained = this.#retained.get(namespace);
      if (retained === undefined) {
        retained = new Map();
        this.#retained.set(namespace, retained);
      }
      retained.delete(callId);
      retained.set(callId, journal.expiresAt!);
    }
  }

  listJournals(
    namespace: string,
    sessionId: string,
    options: { unfinished?: boolean | undefined } = {},
  ): string[] {
    this.#checkKeys('listJournals', namespace, sessionId);
    const ids: string[] = [];
    const journals = this.#journals.get(namespace);
    const now = this.#now();
    for (const callId of this.#callIdsOf(namespace, sessionId, false) ?? []) {
      const journal = journals!.get(callId)!;
      if (options.unfinished ? !journal.finished : !this.#gone(journal, now)) ids.push(callId);
    }
    return ids;
  }

  listUnfinishedCalls(namespace: string, options: ListOptions = {}): UnfinishedCallPage {
    this.#checkKeys('listUnfinishedCalls', namespace);
    const limit = checkLimit(options.limit);
    const calls: UnfinishedCall[] = [];
    for (const [callId, journal] of this.#journals.get(namespace) ?? []) {
      if (journal.finished || (options.after !== undefined && callId <= options.after)) continue;
      calls.push({ callId, sessionId: journal.sessionId });
    }
    calls.sort((a, b) => (a.callId < b.callId ? -1 : a.callId > b.callId ? 1 : 0));
    if (calls.length <= limit) return { calls };
    calls.length = limit;
    return { calls, next: calls.at(-1)!.callId };
  }

  deleteJournal(namespace: string, callId: string): boolean {
    this.#checkKeys('deleteJournal', namespace, callId);
    const journal = this.#journals.get(namespace)?.get(callId);
    if (journal === undefined) return false;
    this.#deleteJournal(namespace, callId, journal);
    return !this.#gone(journal, this.#now());
  }

  createRun(namespace: string, runId: string, options: CreateRunOptions): CreatedRun {
    this.#checkKeys('createRun', namespace, runId, options?.sessionId);
    const status = checkRunStatus(this.description, 'createRun', options.status ?? 'queued');
    const ttlMs = checkRunTtl(this.description, 'createRun', options.ttlMs);
    const now = this.#now();
    this.#pruneRuns(namespace, now, PRUNE_BATCH);
    const existing = this.#liveRun(namespace, runId, now);
    if (existing !== undefined) return { created: false, run: runRecord(runId, existing) };
    let runs = this.#runs.get(namespace);
    if (runs === undefined) {
      runs = new Map();
      this.#runs.set(namespace, runs);
    }
    const run: Run = {
      sessionId: options.sessionId,
      status,
      types: [],
      data: [],
      createdAt: now,
      updatedAt: now,
      result: undefined,
      cancelRequested: false,
      expiresAt: now + ttlMs,
      ttlMs,
    };
    runs.set(runId, run);
    let sessions = this.#sessionRuns.get(namespace);
    if (sessions === undefined) {
      sessions = new Map();
      this.#sessionRuns.set(namespace, sessions);
    }
    let ids = sessions.get(options.sessionId);
    if (ids === undefined) {
      ids = new Set();
      sessions.set(options.sessionId, ids);
    }
    ids.add(runId);
    this.#expiresAt(namespace, runId, run, undefined);
    this.#runWatchers.notify(namespace, runId);
    return { created: true, run: runRecord(runId, run) };
  }

  appendRuns(writes: readonly RunWrite[]): RunWritten[] {
    this.#open('appendRuns');
    for (const write of writes) checkRunWrite(this.description, write);
    const now = this.#now();
    const written: RunWritten[] = [];
    for (const write of writes) {
      const run = this.#liveRun(write.namespace, write.runId, now);
      if (run === undefined) {
        written.push({ lastSeq: -1, cancelRequested: false });
        continue;
      }
      const { events } = write;
      for (let i = 0; i < events.length; i++) {
        run.types.push(events[i]!.type);
        run.data.push(events[i]!.data);
      }
      if (write.status !== undefined) {
        run.status = write.status;
        run.result = write.result;
      }
      run.updatedAt = now;
      const previous = run.ttlMs;
      run.ttlMs = write.ttlMs;
      run.expiresAt = now + write.ttlMs;
      this.#expiresAt(write.namespace, write.runId, run, previous);
      written.push({ lastSeq: run.types.length, cancelRequested: run.cancelRequested });
      this.#runWatchers.notify(write.namespace, write.runId);
    }
    return written;
  }

  readRun(namespace: string, runId: string): RunRecord | undefined {
    this.#checkKeys('readRun', namespace, runId);
    const run = this.#liveRun(namespace, runId, this.#now());
    return run === undefined ? undefined : runRecord(runId, run);
  }

  readRunEvents(namespace: string, runId: string, after: number, limit?: number): RunEventPage | undefined {
    this.#checkKeys('readRunEvents', namespace, runId);
    const most = checkRunRange(this.description, after, limit);
    const run = this.#liveRun(namespace, runId, this.#now());
    if (run === undefined) return undefined;
    const end = Math.min(run.types.length, after + most);
    const events = new Array(Math.max(0, end - after));
    for (let i = after; i < end; i++)
      events[i - after] = { seq: i + 1, type: run.types[i]!, data: run.data[i]! };
    return { run: runRecord(runId, run), events };
  }

  listRuns(namespace: string, sessionId: string, options: RunListOptions = {}): RunPage {
    this.#checkKeys('listRuns', namespace, sessionId);
    const limit = checkLimit(options.limit);
    const now = this.#now();
    const ids = [...(this.#sessionRuns.get(namespace)?.get(sessionId) ?? [])];
    if (options.newestFirst) ids.reverse();
    let start = 0;
    if (options.after !== undefined) start = ids.indexOf(options.after) + 1;
    const runs: RunRecord[] = [];
    for (let i = start; i < ids.length; i++) {
      const run = this.#liveRun(namespace, ids[i]!, now);
      if (run === undefined) continue;
      if (runs.length === limit) return { runs, next: runs.at(-1)!.runId };
      runs.push(runRecord(ids[i]!, run));
    }
    return { runs };
  }

  cancelRun(namespace: string, runId: string): RunRecord | undefined {
    this.#checkKeys('cancelRun', namespace, runId);
    const now = this.#now();
    const run = this.#liveRun(namespace, runId, now);
    if (run === undefined) return undefined;
    if (run.status === 'waiting') {
      run.status = 'cancelled';
      run.updatedAt = now;
    } else if (!runEnded(run.status)) run.cancelRequested = true;
    this.#runWatchers.notify(namespace, runId);
    return runRecord(runId, run);
  }

  deleteRun(namespace: string, runId: string): boolean {
    this.#checkKeys('deleteRun', namespace, runId);
    const run = this.#runs.get(namespace)?.get(runId);
    if (run === undefined) return false;
    this.#dropRun(namespace, runId, run);
    this.#runWatchers.notify(namespace, runId);
    return run.expiresAt > this.#now();
  }

  watchRun(namespace: string, runId: string, listener: () => void): () => void {
    this.#checkKeys('watchRun', namespace, runId);
    return this.#runWatchers.watch(namespace, runId, listener);
  }

  close(): void {
    this.#closed = true;
    this.#sessions.clear();
    this.#journals.clear();
    this.#sessionJournals.clear();
    this.#retained.clear();
    this.#runs.clear();
    this.#sessionRuns.clear();
    this.#runExpiry.clear();
    this.#runWatchers.clear();
  }

  /** The run when it is there and has not expired (an expired one is dropped). */
  #liveRun(namespace: string, runId: string, now: number): Run | undefined {
    const run = this.#runs.get(namespace)?.get(runId);
    if (run === undefined) return undefined;
    if (run.expiresAt > now) return run;
    this.#dropRun(namespace, runId, run);
    return undefined;
  }

  /** Moves a run to the end of its time to live's order (it was just written). */
  #expiresAt(namespace: string, runId: string, run: Run, previousTtl: number | undefined): void {
    let byTtl = this.#runExpiry.get(namespace);
    if (byTtl === undefined) {
      byTtl = new Map();
      this.#runExpiry.set(namespace, byTtl);
    }
    if (previousTtl !== undefined) byTtl.get(previousTtl)?.delete(runId);
    let order = byTtl.get(run.ttlMs);
    if (order === undefined) {
      order = new Map();
      byTtl.set(run.ttlMs, order);
    }
    order.delete(runId);
    order.set(runId, run.expiresAt);
  }

  /** Drops up to `most` runs of a namespace past their time to live, the first to expire first. */
  #pruneRuns(namespace: string, now: number, most: number): void {
    const byTtl = this.#runExpiry.get(namespace);
    if (byTtl === undefined) return;
    let pruned = 0;
    for (const [ttl, order] of byTtl) {
      for (const [runId, expiresAt] of order) {
        if (expiresAt > now || pruned === most) break;
        const run = this.#runs.get(namespace)?.get(runId);
        if (run !== undefined) this.#dropRun(namespace, runId, run);
        else order.delete(runId);
        pruned++;
      }
      if (order.size === 0) byTtl.delete(ttl);
    }
  }

  #dropRun(namespace: string, runId: string, run: Run): void {
    this.#runs.get(namespace)?.delete(runId);
    this.#runExpiry.get(namespace)?.get(run.ttlMs)?.delete(runId);
    const sessions = this.#sessionRuns.get(namespace);
    const ids = sessions?.get(run.sessionId);
    ids?.delete(runId);
    if (ids?.size === 0) sessions!.delete(run.sessionId);
  }

  /**
   * Throws the `StoreConflictError` of a fenced write whose owner no longer holds the session's lease;
   * else extends the lease (a write is the holder's sign of life).
   */
  #fenced(namespace: string, sessionId: string, fence: JournalFence, operation: string, now: number): void {
    // The keys were checked by the caller.
    const session = this.#sessions.get(namespace)?.get(sessionId);
    if (session !== undefined && session.leaseOwner === fence.owner && !expired(session, now)) {
      session.leaseUntil = now + fence.leaseMs;
      return;
    }
    const gone = session !== undefined && expired(session, now);
    if (gone) this.#delete(namespace, sessionId);
    throw fenceConflict(this.description, namespace, sessionId, operation, gone);
  }

  /** True for a finished journal past its retention. */
  #gone(journal: Journal, now: number): boolean {
    return journal.expiresAt !== null && journal.expiresAt <= now;
  }

  /** Deletes up to `most` finished journals of a namespace past their retention, oldest finish first. */
  #prune(namespace: string, now: number, most: number): void {
    const retained = this.#retained.get(namespace);
    if (retained === undefined) return;
    let pruned = 0;
    for (const [callId, expiresAt] of retained) {
      if (expiresAt > now || pruned === most) break;
      retained.delete(callId);
      const journal = this.#journals.get(namespace)?.get(callId);
      if (journal?.finished && this.#gone(journal, now)) {
        this.#deleteJournal(namespace, callId, journal);
      }
      pruned++;
    }
  }

  #deleteJournal(namespace: string, callId: string, journal: Journal): void {
    this.#journals.get(namespace)!.delete(callId);
    this.#retained.get(namespace)?.delete(callId);
    const callIds = this.#callIdsOf(namespace, journal.sessionId, false)!;
    callIds.delete(callId);
    if (callIds.size === 0) this.#sessionJournals.get(namespace)!.delete(journal.sessionId);
  }

  #namespace(namespace: string): Map<string, Session> {
    let sessions = this.#sessions.get(namespace);
    if (sessions === undefined) {
      sessions = new Map();
      this.#sessions.set(namespace, sessions);
    }
    return sessions;
  }

  /** The session when it exists and has not expired (an expired one is dropped). */
  #live(namespace: string, sessionId: string, operation: string, now: number): Session | undefined {
    this.#checkKeys(operation, namespace, sessionId);
    const session = this.#sessions.get(namespace)?.get(sessionId);
    if (session !== undefined && expired(session, now)) {
      this.#delete(namespace, sessionId);
      return undefined;
    }
    return session;
  }

  /** Drops a session and its journals. */
  #delete(namespace: string, sessionId: string): void {
    this.#sessions.get(namespace)?.delete(sessionId);
    const callIds = this.#callIdsOf(namespace, sessionId, false);
    if (callIds === undefined) return;
    const journals = this.#journals.get(namespace)!;
    for (const callId of callIds) journals.delete(callId);
    this.#sessionJournals.get(namespace)!.delete(sessionId);
  }

  /** The call ids of a session's journals (made when `create` and there are none yet). */
  #callIdsOf(namespace: string, sessionId: string, create: boolean): Set<string> | undefined {
    let sessions = this.#sessionJournals.get(namespace);
    if (sessions === undefined) {
      if (!create) return undefined;
      sessions = new Map();
      this.#sessionJournals.set(namespace, sessions);
    }
    let callIds = sessions.get(sessionId);
    if (callIds === undefined && create) {
      callIds = new Set();
      sessions.set(sessionId, callIds);
    }
    return callIds;
  }

  #checkKeys(operation: string, ...keys: string[]): void {
    this.#open(operation);
    for (const key of keys) checkStoreKey(this.description, operation, key);
  }

  #open(operation: string): void {
    if (this.#closed) {
      throw new StoreError({ message: `${this.description} is closed`, store: this.description, operation });
    }
  }
}

/** `Date.now()`, read when called (a test's fake clock installed later counts). */
function now(): number {
  return Date.now();
}

function runRecord(runId: string, run: Run): RunRecord {
  return {
    runId,
    sessionId: run.sessionId,
    status: run.status,
    lastSeq: run.types.length,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    result: run.result,
    cancelRequested: run.cancelRequested,
    expiresAt: run.expiresAt,
  };
}

function info(sessionId: string, session: Session): SessionInfo {
  return { sessionId, version: session.version, updatedAt: session.updatedAt, expiresAt: session.expiresAt };
}

function expired(session: Session, now: number): boolean {
  return session.expiresAt !== null && session.expiresAt <= now;
}

/** The `StoreError` of a journal write naming a call whose journal belongs to another session. */
export function otherSession(
  store: string,
  operation: string,
  namespace: string,
  callId: string,
): StoreError {
  return new StoreError({
    message: `${store}.${operation}: call ${JSON.stringify(callId)} of ${JSON.stringify(namespace)} belongs to another session; a call's journal stays with the session it was made on`,
    store,
    operation,
  });
}

/** A JSON copy: the store keeps and returns only what JSON can hold, as any other store would. */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

export { checkStoreKey };

/** The `ttlMs` option, checked. */
export function checkTtl(ttlMs: number | undefined): number | undefined {
  if (ttlMs !== undefined && !(Number.isSafeInteger(ttlMs) && ttlMs > 0)) {
    throw new ConfigurationError({ message: `ttlMs must be a positive integer (ms), got ${ttlMs}` });
  }
  return ttlMs;
}

/** The `limit` of a listing, checked. */
export function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return 100;
  if (!(Number.isSafeInteger(limit) && limit > 0)) {
    throw new ConfigurationError({ message: `limit must be a positive integer, got ${limit}` });
  }
  return limit;
}
