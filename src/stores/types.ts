import type { LagentMessageJSON } from '../schema/agent-message';
import { StoreConflictError, StoreError } from '../schema/errors';

/*
 * The one interface every store implements (MemoryStore here; SQLiteStore, RedisStore and PostgresStore in
 * lagent-ts/stores): session memories, written a turn at a time, and call journals.
 *
 * A store holds *sessions* inside *namespaces* (an app, or one agent tree: its name by default). A session's
 * state is every memory of the agent tree for that session, in Lagent's state-dict shape: dotted paths
 * (`memory`, `writer.memory`) to messages in Lagent's JSON shape. It changes only by whole turns, each
 * committed atomically with compare-and-set on the session's version under a lease: two processes sharing
 * the store never interleave one session's turns, and a failed call commits nothing.
 *
 * Methods return values (sync stores: MemoryStore, SQLiteStore, which sync agents can use) or promises (async
 * stores: RedisStore, PostgresStore); `synchronous` says which. Async agents take either.
 */

/** A value, or a promise of it: what a store method returns (see {@link SessionStore.synchronous}). */
export type MaybePromise<T> = T | Promise<T>;

/** A session's memories: dotted memory paths to messages, in Lagent's JSON shape (its `state_dict()`). */
export type StoredState = Record<string, LagentMessageJSON[]>;

/**
 * One committed turn: what the agent tree's call changed in the session. `append` adds messages at the end
 * of a memory; `replace` sets a memory's whole history (an edit other than appending, a `loadStateDict`, a
 * reset: `[]`). A path in neither is unchanged. Both may name paths the state does not have yet.
 */
export interface SessionTurn {
  append?: StoredState | undefined;
  replace?: StoredState | undefined;
}

/** What {@link SessionStore.acquireSession} takes. */
export interface AcquireOptions {
  /**
   * Who takes the lease, and the fencing token of this acquisition: a commit or fenced journal write made
   * with it is refused once another owner took the lease. Use a new one for each acquisition (a random id):
   * an owner that takes the lease again while it holds it keeps it (re-entry).
   */
  owner: string;
  /** How long the lease lasts unless renewed or released, in ms. */
  leaseMs: number;
  /**
   * The version the caller holds in memory, if any: when the store is at that version, the state is not sent
   * back (`state` undefined).
   */
  knownVersion?: number | undefined;
}

/** The session is ours: its version, and its state unless the caller already holds that version. */
export interface AcquiredSession {
  acquired: true;
  /** 0 for a session the store does not have (never written, deleted or expired). */
  version: number;
  /** The session's state at `version`; undefined when it is `knownVersion`. `{}` for version 0. */
  state: StoredState | undefined;
}

/** Another owner holds the session's lease until `until` (epoch ms, the store's clock): try again later. */
export interface BusySession {
  acquired: false;
  until: number;
}

/** What {@link SessionStore.commitTurn} takes. */
export interface CommitOptions {
  /** The lease's owner; the commit fails with a `StoreConflictError` when the lease is no longer theirs. */
  owner: string;
  /** The version the turn was made on; the commit fails with a `StoreConflictError` when the store moved. */
  version: number;
  turn: SessionTurn;
  /** Release the lease with the commit (the end of a call). @default true */
  release?: boolean | undefined;
  /**
   * Names this turn (a random id, or the durable call's id). A commit whose `turnId` is that of the session's
   * last committed turn changes nothing and returns the session's version: a commit tried again after its
   * answer was lost (a timeout, a broken connection) never writes its turn twice.
   */
  turnId?: string | undefined;
}

/**
 * What fences a journal write: the session's lease as `owner` acquired it. The write is made only while no
 * other owner has taken the lease since (one whose lease ran out with nobody taking it may go on), in the
 * same atomic operation, and extends the lease to now + `leaseMs`; else it is refused with a
 * `StoreConflictError`.
 */
export interface JournalFence {
  owner: string;
  leaseMs: number;
}

/** What {@link SessionStore.finishJournal} takes. */
export interface FinishJournalOptions {
  /** An entry appended with the finish, in the same atomic write (the call's outcome). */
  entry?: unknown;
  /**
   * How long the finished journal is kept, in ms: then it is pruned (by later journal writes of its namespace,
   * and `purgeExpired`) and reads no longer find it. @default kept until its session is deleted
   */
  retainMs?: number | undefined;
  /** Fences the write with the journal's session lease, as {@link SessionStore.appendJournal} does. */
  fence?: JournalFence | undefined;
}

/** A call whose journal is not finished, as {@link SessionStore.listUnfinishedCalls} lists it. */
export interface UnfinishedCall {
  callId: string;
  sessionId: string;
}

/** A page of unfinished calls, in call id order; `next` is set when there are more. */
export interface UnfinishedCallPage {
  calls: UnfinishedCall[];
  next?: string | undefined;
}

/** A session as listed. */
export interface SessionInfo {
  /** The session's key: `String(sessionId)`. */
  sessionId: string;
  version: number;
  /** When its last turn was committed (epoch ms). */
  updatedAt: number;
  /** When it expires (epoch ms), or null for never. */
  expiresAt: number | null;
}

/** A session read whole (`readSession`). */
export interface StoredSession extends SessionInfo {
  state: StoredState;
}

/** Options of {@link SessionStore.listSessions}. */
export interface ListOptions {
  /** Sessions after this key, in key order (the `next` of the previous page). */
  after?: string | undefined;
  /** @default 100 */
  limit?: number | undefined;
}

/** A page of sessions, in key order; `next` is set when there are more. */
export interface SessionPage {
  sessions: SessionInfo[];
  next?: string | undefined;
}

/**
 * One entry of a call's journal (see durable agents): its place in the call, and data the store keeps as
 * JSON without reading it.
 */
export interface JournalEntry {
  /** 0, 1, 2, ... in the order they were appended. */
  seq: number;
  data: unknown;
}

/** A call journal as stored: the session it belongs to, its entries, and whether the call finished. */
export interface StoredJournal {
  callId: string;
  sessionId: string;
  entries: JournalEntry[];
  finished: boolean;
}

/**
 * What every store implements. Keys (`namespace`, `sessionId`, `callId`) are strings of at most 1,024
 * characters. Every failure to reach or use the backing service is a `StoreError` naming the store and the
 * operation; a stored value that cannot be read is a `StoreError` naming the session (others stay readable).
 */
export interface SessionStore {
  /** True when every method returns its value (usable by sync agents), false when it returns promises. */
  readonly synchronous: boolean;
  /** e.g. `'SQLiteStore(./sessions.db)'`, for messages. */
  readonly description: string;

  /**
   * Takes the session's lease for `owner` (free, expired, or already theirs) and returns its version (and its
   * state when the caller does not hold that version), or says until when another owner holds it.
   */
  acquireSession(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): MaybePromise<AcquiredSession | BusySession>;

  /**
   * Extends a lease `owner` holds to now + `leaseMs`; false when the lease is no longer theirs (another owner
   * took it, it was released, or the session is gone). A lease that ran out with nobody taking it is still
   * theirs.
   */
  renewLease(namespace: string, sessionId: string, owner: string, leaseMs: number): MaybePromise<boolean>;

  /** Releases `owner`'s lease (nothing when it is not theirs). */
  releaseSession(namespace: string, sessionId: string, owner: string): MaybePromise<void>;

  /**
   * Commits one turn atomically when `owner` holds the lease (a lease that ran out with nobody taking it
   * counts) and the session is at `version`, and returns the new version (`version + 1`); else throws a
   * `StoreConflictError` and changes nothing. Sets the session's expiry to now + `ttlMs` when the store has
   * one. A commit whose `turnId` is the session's last committed turn's returns the session's version and
   * changes nothing (releasing the lease when asked).
   */
  commitTurn(namespace: string, sessionId: string, options: CommitOptions): MaybePromise<number>;

  /** The session's state and version, or undefined when the store does not have it. Takes no lease. */
  readSession(namespace: string, sessionId: string): MaybePromise<StoredSession | undefined>;

  /** The namespace's sessions, in key order, a page at a time. Expired sessions are not listed. */
  listSessions(namespace: string, options?: ListOptions): MaybePromise<SessionPage>;

  /** Deletes a session (and its journals); true when it existed. A lease on it is dropped. */
  deleteSession(namespace: string, sessionId: string): MaybePromise<boolean>;

  /**
   * Deletes every expired session now (reads already skip them), and every finished journal past its
   * retention; returns how many sessions.
   */
  purgeExpired(namespace?: string): MaybePromise<number>;

  /**
   * Appends an entry to a call's journal (created, for `sessionId`, by its first entry; an entry appended to a
   * finished journal reopens it); returns its `seq`. With `fence`, only while the fence's owner holds the
   * session's lease (see {@link JournalFence}).
   */
  appendJournal(
    namespace: string,
    sessionId: string,
    callId: string,
    data: unknown,
    fence?: JournalFence,
  ): MaybePromise<number>;

  /** A call's journal, or undefined when there is none (or it was finished longer ago than its retention). */
  readJournal(namespace: string, callId: string): MaybePromise<StoredJournal | undefined>;

  /**
   * Marks a call's journal finished, with its last entry when given: kept `retainMs` (or until its session is
   * deleted, or `deleteJournal`). With `fence`, only while the fence's owner holds the journal's session lease.
   */
  finishJournal(namespace: string, callId: string, options?: FinishJournalOptions): MaybePromise<void>;

  /** The ids of a session's journals, oldest first; with `unfinished`, only calls not marked finished. */
  listJournals(
    namespace: string,
    sessionId: string,
    options?: { unfinished?: boolean | undefined },
  ): MaybePromise<string[]>;

  /** Deletes a call's journal; true when it existed. */
  deleteJournal(namespace: string, callId: string): MaybePromise<boolean>;

  /**
   * The namespace's calls whose journals are not finished, across its sessions, in call id order, a page at a
   * time (what a process recovers at start: see `agent.recoverAll`). Stores of lagent-ts have it; one that
   * does not cannot recover a whole namespace at once.
   */
  listUnfinishedCalls?(namespace: string, options?: ListOptions): MaybePromise<UnfinishedCallPage>;

  /** Closes connections and files; the store is unusable after. Idempotent. */
  close(): MaybePromise<void>;
}

/** A store whose methods return values: what sync agents take. */
export type SyncSessionStore = SessionStore & { readonly synchronous: true };

/** Options every store takes. */
export interface StoreOptions {
  /** Sessions expire this long after their last committed turn, in ms. @default never */
  ttlMs?: number | undefined;
}

/**
 * The state after a turn: `replace`d paths set, then `append`ed messages added. `state` is not changed; the
 * result shares unchanged paths' arrays with it.
 */
export function applyTurn(state: StoredState, turn: SessionTurn): StoredState {
  const next: StoredState = { ...state };
  if (turn.replace)
    for (const [path, messages] of Object.entries(turn.replace)) next[path] = messages.slice();
  if (turn.append) {
    for (const [path, messages] of Object.entries(turn.append)) {
      if (messages.length > 0) next[path] = [...(next[path] ?? []), ...messages];
    }
  }
  return next;
}

/** The longest key a store accepts (namespace, session id, call id). */
export const MAX_STORE_KEY = 1024;

/** Throws a `StoreError` for a key that is not a string of 1 to {@link MAX_STORE_KEY} characters. */
export function checkStoreKey(store: string, operation: string, key: unknown): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_STORE_KEY) {
    throw new StoreError({
      message: `${store}.${operation}: keys are strings of 1 to ${MAX_STORE_KEY} characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}`,
      store,
      operation,
    });
  }
}

/**
 * Why a commit was refused: the lease is not the caller's (another owner took it, or it was released), the
 * session expired (its `ttlMs` passed) during the call, or it is not at the caller's version.
 */
export type CommitRefusal =
  | { reason: 'lease' }
  | { reason: 'expired' }
  | { reason: 'version'; actual: number | string };

/** Why a lease is not the caller's any more, in every store's words. */
const LEASE_LOST = 'is no longer leased to this caller (another owner took its lease, or it was released)';

/** The `StoreConflictError` every store throws for a refused commit, in the same words. */
export function commitConflict(
  store: string,
  namespace: string,
  sessionId: string,
  expected: number,
  refusal: CommitRefusal,
): StoreConflictError {
  const session = `${store}: session ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)}`;
  const why =
    refusal.reason === 'version'
      ? `is at version ${refusal.actual}, not ${expected}`
      : refusal.reason === 'expired'
        ? 'expired (its ttlMs passed) during the call'
        : LEASE_LOST;
  return new StoreConflictError({
    message: `${session} ${why}; the turn was not committed`,
    store,
    operation: 'commitTurn',
    sessionId,
  });
}

/**
 * The `StoreConflictError` every store throws for a fenced journal write whose fence no longer holds the
 * session's lease (`expired`: the session expired meanwhile).
 */
export function fenceConflict(
  store: string,
  namespace: string,
  sessionId: string,
  operation: string,
  expired = false,
): StoreConflictError {
  const session = `${store}: session ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)}`;
  const why = expired ? 'expired (its ttlMs passed) during the call' : LEASE_LOST;
  return new StoreConflictError({
    message: `${session} ${why}; the journal entry was not written`,
    store,
    operation,
    sessionId,
  });
}

/** The `retainMs` of a journal finish, checked. */
export function checkRetain(store: string, retainMs: number | undefined): number | undefined {
  if (retainMs !== undefined && !(Number.isSafeInteger(retainMs) && retainMs >= 0)) {
    throw new StoreError({
      message: `${store}.finishJournal: retainMs must be a whole number of ms, got ${retainMs}`,
      store,
      operation: 'finishJournal',
    });
  }
  return retainMs;
}

/** Finished journals past their retention that one journal write prunes, at most. */
export const PRUNE_BATCH = 16;

/**
 * A write queued to run with the others queued in the same turn of the event loop, in one transaction:
 * `result` settles after that transaction ends. `cancel()` takes it back while it has not run (false when
 * it has). A write the store made at once has its outcome in `made` (and `result` settled).
 */
export interface GroupedWrite<T> {
  readonly result: Promise<T>;
  readonly made?: { value: T } | { error: unknown } | undefined;
  cancel(): boolean;
}

/**
 * What a synchronous store may add for async callers: the lease and commit writes of calls running
 * concurrently share one write transaction (each still atomic on its own, and each commit durable before its
 * `result` settles), rather than one transaction each. Semantics are those of `acquireSession` and
 * `commitTurn`.
 */
export interface GroupedSessionWrites {
  acquireSessionGrouped(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): GroupedWrite<AcquiredSession | BusySession>;
  commitTurnGrouped(namespace: string, sessionId: string, options: CommitOptions): GroupedWrite<number>;
}

/** The store's grouped writes, when it has them. */
export function groupedWrites(store: SessionStore): GroupedSessionWrites | undefined {
  const grouped = store as Partial<GroupedSessionWrites>;
  return typeof grouped.acquireSessionGrouped === 'function' &&
    typeof grouped.commitTurnGrouped === 'function'
    ? (grouped as GroupedSessionWrites)
    : undefined;
}

/*
 * Run logs: what a run (a call started in the background, see `agent.start`) did, as numbered events, kept
 * while it runs and for a retention time after. A run's events are appended by the one process that runs it
 * and read by any number of readers, from any event on (`readRunEvents`), who wait for more with `watchRun`.
 * Events are kept as their JSON text: what is written is served as it is, parsed by nobody in between.
 */

/**
 * Where a run stands: waiting to start (`queued`), `running`, paused for a person's decision (`waiting`), or
 * ended: `done`, `failed` or `cancelled`.
 */
export type RunStatus = 'queued' | 'running' | 'waiting' | 'done' | 'failed' | 'cancelled';

/** An event of a run's log as written: its type, and its data as JSON text. */
export interface RunEventInput {
  type: string;
  data: string;
}

/** An event of a run's log as read: numbered 1, 2, ... in the order written. */
export interface RunEvent extends RunEventInput {
  seq: number;
}

/** A run as a store keeps it. */
export interface RunRecord {
  runId: string;
  /** The session it runs on: `String(sessionId)`. */
  sessionId: string;
  status: RunStatus;
  /** The number of its last event; 0 before the first. */
  lastSeq: number;
  /** When it was created and last written (epoch ms, the store's clock). */
  createdAt: number;
  updatedAt: number;
  /** What the writer keeps with its status (JSON text: its reply, or why it failed), if anything. */
  result: string | undefined;
  /** Somebody asked for it to be cancelled (`cancelRun`) while it was queued or running. */
  cancelRequested: boolean;
  /** When it is dropped, unless written again (epoch ms): `ttlMs` after its last write. */
  expiresAt: number;
}

/** What {@link SessionStore.createRun} takes. */
export interface CreateRunOptions {
  sessionId: string;
  /** @default 'queued' */
  status?: RunStatus | undefined;
  /** The run is kept this long after its last write, in ms. */
  ttlMs: number;
}

/** What {@link SessionStore.createRun} did: `created` false when a run of that id was there (left as it is). */
export interface CreatedRun {
  created: boolean;
  run: RunRecord;
}

/**
 * One write of {@link SessionStore.appendRuns}: events appended to a run's log, and, with `status`, its new
 * status and `result` (a status written without a result clears the one it had).
 */
export interface RunWrite {
  namespace: string;
  runId: string;
  events: readonly RunEventInput[];
  status?: RunStatus | undefined;
  result?: string | undefined;
  /** From this write on, the run is kept this long, in ms: its time to live while it runs, its retention once ended. */
  ttlMs: number;
}

/** What one {@link RunWrite} found. */
export interface RunWritten {
  /** The number of the run's last event after the write; -1 when the run is gone (expired or deleted): nothing was written. */
  lastSeq: number;
  /** A cancellation was asked for: the writer should stop the run. */
  cancelRequested: boolean;
}

/** A run and events of its log, in order (those after the `after` asked for, up to the limit). */
export interface RunEventPage {
  run: RunRecord;
  events: RunEvent[];
}

/** Options of {@link SessionStore.listRuns}. */
export interface RunListOptions extends ListOptions {
  /** Newest first (the session's latest run first) rather than oldest first. */
  newestFirst?: boolean | undefined;
}

/** A page of a session's runs, in creation order (or newest first); `next` is set when there are more. */
export interface RunPage {
  runs: RunRecord[];
  next?: string | undefined;
}

/**
 * The run log part of a store (every store of lagent-ts has it; a store of your own may leave it out, and runs
 * then need another store). Keys are those of sessions (strings of 1 to 1,024 characters).
 */
export interface RunLogStore {
  /** e.g. `'RedisStore(127.0.0.1:6379)'`, for messages. */
  readonly description: string;
  /**
   * Creates a run (its log empty), or finds the one of that id (then `created` is false and it is left as it
   * is). Prunes a few runs past their time to live.
   */
  createRun(namespace: string, runId: string, options: CreateRunOptions): MaybePromise<CreatedRun>;
  /**
   * Appends events to runs' logs and sets their status, each write atomic on its own (a synchronous store
   * makes them in one transaction): what a run's writer does once per turn of the event loop for every run it
   * writes. A write to a run that is gone writes nothing (`lastSeq` -1). Watchers of each run are told.
   */
  appendRuns(writes: readonly RunWrite[]): MaybePromise<RunWritten[]>;
  /** A run, or undefined when there is none (or it expired). */
  readRun(namespace: string, runId: string): MaybePromise<RunRecord | undefined>;
  /** A run and its events after `after` (at most `limit`, default 1,000), or undefined when there is no such run. */
  readRunEvents(
    namespace: string,
    runId: string,
    after: number,
    limit?: number,
  ): MaybePromise<RunEventPage | undefined>;
  /** A session's runs, oldest first (or newest first), a page at a time. Runs past their time to live are not listed. */
  listRuns(namespace: string, sessionId: string, options?: RunListOptions): MaybePromise<RunPage>;
  /**
   * Asks for a run to be cancelled: a queued or running one is marked (its writer sees `cancelRequested` and
   * stops it), a waiting one is cancelled at once; an ended one is left as it is. The run as it is now, or
   * undefined when there is none. Watchers are told.
   */
  cancelRun(namespace: string, runId: string): MaybePromise<RunRecord | undefined>;
  /** Deletes a run and its log; true when it existed. */
  deleteRun(namespace: string, runId: string): MaybePromise<boolean>;
  /**
   * Calls `listener` (with no argument, maybe more often than needed) after each change of the run: its events,
   * its status, a cancellation. Changes made in this process always; made by other processes when
   * {@link RunLogStore.watchesOtherProcesses} (readers of the others poll), from the moment the store hears
   * them, which it says by calling every listener once (a reader reads again then, and misses nothing).
   * Returns what stops it.
   */
  watchRun(namespace: string, runId: string, listener: () => void): () => void;
  /** Whether `watchRun` hears changes other processes make (Redis, PostgreSQL), not only this one's. */
  readonly watchesOtherProcesses: boolean;
}

/** The events a page of {@link RunLogStore.readRunEvents} holds at most by default. */
export const RUN_PAGE = 1_000;

/** Whether a run's status is an end (`done`, `failed`, `cancelled`). */
export function runEnded(status: RunStatus): boolean {
  return status === 'done' || status === 'failed' || status === 'cancelled';
}

/** The store's run log, when it has one. */
export function runLogOf(store: SessionStore): (SessionStore & RunLogStore) | undefined {
  const log = store as Partial<RunLogStore>;
  return typeof log.appendRuns === 'function' && typeof log.readRunEvents === 'function'
    ? (store as SessionStore & RunLogStore)
    : undefined;
}
