import { createRequire } from 'node:module';
import { ConfigurationError, missingPeer, StoreError } from '../schema/errors';
import { errorMessage } from '../utils/text';
import { checkLimit, checkStoreKey, checkTtl, otherSession } from './memory-store';
import {
  checkRunRange,
  checkRunStatus,
  checkRunTtl,
  checkRunWrite,
  type RunWatchers,
  sharedRunWatchers,
} from './run-log';
import {
  fromSqliteKey,
  migrateSqlite,
  SQLITE_NOW,
  type SqliteDatabase,
  type SqliteStatement,
  type SqliteTransaction,
  sqliteKey,
  sqliteTables,
} from './sqlite-schema';
import {
  type AcquiredSession,
  type AcquireOptions,
  applyTurn,
  type BusySession,
  type CommitOptions,
  type CreatedRun,
  type CreateRunOptions,
  checkRetain,
  commitConflict,
  type FinishJournalOptions,
  fenceConflict,
  type GroupedSessionWrites,
  type GroupedWrite,
  type JournalEntry,
  type JournalFence,
  type ListOptions,
  PRUNE_BATCH,
  type RunEvent,
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
  type SessionTurn,
  type StoredJournal,
  type StoredSession,
  type StoredState,
  type StoreOptions,
  type SyncSessionStore,
  type UnfinishedCallPage,
} from './types';

/** Options of {@link SQLiteStore}: a file to open, or a database the caller opened (and closes). */
export type SQLiteStoreOptions = StoreOptions & {
  /**
   * Prefix of the store's table names, so several apps share one file: letters, digits and `_`.
   * @default 'lagent_'
   */
  tablePrefix?: string | undefined;
  /**
   * How long a call waits for another connection's write transaction before failing with a `StoreError`, in
   * ms (a database the caller passes keeps its own setting).
   * @default 5000
   */
  busyTimeoutMs?: number | undefined;
} & (
    | {
        /** The database file (created when missing), or `':memory:'`. */
        path: string;
        database?: undefined;
      }
    | {
        /**
         * A better-sqlite3 `Database` the caller owns: used as configured (set WAL and a busy timeout on it
         * for several processes), and left open by {@link SQLiteStore.close}.
         */
        database: unknown;
        path?: undefined;
      }
  );

/** A commit folds the turns into a new base when the session has more than this many since its base. */
const FOLD_AFTER = 32;

/** A write waiting for the next grouped transaction. */
interface QueuedWrite {
  operation: string;
  namespace: string;
  sessionId: string;
  body: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  cancelled: boolean;
}

interface SessionRow {
  version: number;
  updated_at: number;
  expires_at: number | null;
  lease_owner: string | null;
  lease_until: number;
  base_version: number;
  last_turn_id: string | null;
}

interface RunRow {
  id: number;
  run_id: Uint8Array;
  session_id: Uint8Array;
  status: RunStatus;
  last_seq: number;
  created_at: number;
  updated_at: number;
  result: string | null;
  cancel_requested: number;
  expires_at: number;
}

interface JournalRow {
  id: number;
  session_id: Uint8Array;
  entries: number;
  finished: number;
  expires_at: number | null;
}

type BetterSqlite3 = new (path: string, options: { timeout: number }) => SqliteDatabase;

let driver: BetterSqlite3 | undefined;

/** better-sqlite3, loaded on first use (synchronously: the constructor is sync). */
function loadDriver(): BetterSqlite3 {
  if (driver) return driver;
  try {
    const from: unknown = import.meta.url;
    const base = typeof from === 'string' && from.startsWith('file:') ? from : __filename;
    driver = createRequire(base)('better-sqlite3') as BetterSqlite3;
  } catch (error) {
    throw missingPeer(['better-sqlite3'], 'SQLiteStore', error);
  }
  return driver;
}

/**
 * A store in an SQLite file, on better-sqlite3: synchronous, so sync agents can use it. Several processes may
 * share the file (WAL mode; a writer waits up to `busyTimeoutMs`, 5 s by default, for another's transaction). Each commit is one IMMEDIATE
 * transaction that checks the lease and the version and writes only the turn: a session is a base state plus
 * the turns since it, folded into a new base every 32 turns. Async agents' calls running at once share their
 * lease and commit transactions (see {@link SQLiteStore.acquireSessionGrouped}). Times (leases, expiry) are
 * the database's clock, read by SQLite in the writer's transaction, not each process's `Date.now()`.
 *
 * @example
 * const store = new SQLiteStore({ path: './sessions.db', ttlMs: 7 * 24 * 3600_000 });
 * const agent = new Agent({ llm, memory: { store } });
 */
export class SQLiteStore implements SyncSessionStore, GroupedSessionWrites, RunLogStore {
  readonly synchronous = true as const;
  readonly description: string;
  readonly ttlMs: number | undefined;
  readonly #db: SqliteDatabase;
  readonly #owned: boolean;
  readonly #sql: Statements;
  readonly #acquire: SqliteTransaction<[string, string, AcquireOptions], AcquiredSession | BusySession>;
  readonly #commit: SqliteTransaction<[string, string, CommitOptions, string], number>;
  readonly #release: SqliteTransaction<[Buffer, Buffer, string], void>;
  readonly #read: SqliteTransaction<[string, string], StoredSession | undefined>;
  readonly #tx: SqliteTransaction<[() => unknown], unknown>;
  #queued: QueuedWrite[] = [];
  /** A grouped write was made at once in this turn of the event loop: the next ones are queued. */
  #wroteThisTurn = false;
  /** The last group held several writes: calls are running concurrently, so every write is queued. */
  #busy = false;
  #closed = false;
  /** Other processes' writes are not heard: their readers poll. */
  readonly watchesOtherProcesses = false;
  readonly #runWatchers: { watchers: RunWatchers; release(): void };

  constructor(options: SQLiteStoreOptions) {
    this.ttlMs = checkTtl(options.ttlMs);
    const prefix = options.tablePrefix ?? 'lagent_';
    if (typeof prefix !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(prefix)) {
      throw new ConfigurationError({
        message: `SQLiteStore: tablePrefix must be letters, digits and _ (not starting with a digit, at most 64), got ${JSON.stringify(prefix)}`,
      });
    }
    if (options.database !== undefined) {
      if (!isDatabase(options.database)) {
        throw new ConfigurationError({
          message: 'SQLiteStore: database must be an open better-sqlite3 Database',
        });
      }
      this.#db = options.database;
      this.#owned = false;
      this.description = `SQLiteStore(${this.#db.name})`;
    } else {
      if (typeof options.path !== 'string' || options.path === '') {
        throw new ConfigurationError({
          message: 'SQLiteStore: give path (a database file) or database (a better-sqlite3 Database)',
        });
      }
      this.description = `SQLiteStore(${options.path})`;
      const timeout = options.busyTimeoutMs ?? 5_000;
      if (!(Number.isSafeInteger(timeout) && timeout >= 0)) {
        throw new ConfigurationError({
          message: `SQLiteStore: busyTimeoutMs must be a non-negative integer (ms), got ${timeout}`,
        });
      }
      const Database = loadDriver();
      try {
        this.#db = new Database(options.path, { timeout });
      } catch (error) {
        throw this.#failure('open', undefined, undefined, error);
      }
      this.#owned = true;
    }
    try {
      if (this.#owned) {
        // WAL with synchronous NORMAL: a committed transaction is in the WAL file when COMMIT returns, so it
        // survives the process being killed (SIGKILL included); only an OS crash or power loss may lose the
        // last transactions (never corrupting the file).
        this.#db.pragma('journal_mode = WAL');
        this.#db.pragma('synchronous = NORMAL');
        // Checkpoints (the only fsyncs in WAL with synchronous NORMAL) every 10,000 pages rather than 1,000:
        // a turn rewrites the same few pages, so a larger WAL copies each of them once per checkpoint.
        this.#db.pragma('wal_autocheckpoint = 10000');
      }
      migrateSqlite(this.#db, prefix, this.description);
      this.#sql = prepare(this.#db, prefix);
    } catch (error) {
      if (this.#owned) this.#db.close();
      throw error instanceof StoreError ? error : this.#failure('open', undefined, undefined, error);
    }
    this.#acquire = this.#db.transaction((namespace, sessionId, options) =>
      this.#acquireIn(namespace, sessionId, options),
    );
    this.#commit = this.#db.transaction((namespace, sessionId, options, turn) =>
      this.#commitIn(namespace, sessionId, options, turn),
    );
    this.#release = this.#db.transaction((ns, id, owner) => {
      if (this.#sql.release.run(ns, id, owner).changes === 0) this.#sql.dropPlaceholder.run(ns, id, owner);
    });
    this.#read = this.#db.transaction((namespace, sessionId) => this.#readIn(namespace, sessionId));
    this.#tx = this.#db.transaction((body) => body());
    // Stores of the same file and tables in this process hear each other's run writes.
    this.#runWatchers = sharedRunWatchers(`SQLiteStore\u0000${this.#db.name}\u0000${prefix}`);
  }

  acquireSession(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): AcquiredSession | BusySession {
    this.#checkKeys('acquireSession', namespace, sessionId);
    return this.#run('acquireSession', namespace, sessionId, () =>
      this.#acquire.immediate(namespace, sessionId, options),
    );
  }

  renewLease(namespace: string, sessionId: string, owner: string, leaseMs: number): boolean {
    this.#checkKeys('renewLease', namespace, sessionId);
    // One statement: SQLite's clock is read in it. A lease that ran out with nobody taking it is renewed.
    return this.#run(
      'renewLease',
      namespace,
      sessionId,
      () => this.#sql.renew.run(leaseMs, sqliteKey(namespace), sqliteKey(sessionId), owner).changes > 0,
    );
  }

  releaseSession(namespace: string, sessionId: string, owner: string): void {
    this.#checkKeys('releaseSession', namespace, sessionId);
    this.#run('releaseSession', namespace, sessionId, () =>
      this.#release.immediate(sqliteKey(namespace), sqliteKey(sessionId), owner),
    );
  }

  commitTurn(namespace: string, sessionId: string, options: CommitOptions): number {
    this.#checkKeys('commitTurn', namespace, sessionId);
    // Serialized first: a turn that cannot be stored as JSON changes nothing.
    const turn = this.#run('commitTurn', namespace, sessionId, () => JSON.stringify(options.turn ?? {}));
    return this.#run('commitTurn', namespace, sessionId, () =>
      this.#commit.immediate(namespace, sessionId, options, turn),
    );
  }

  /**
   * `acquireSession` for async callers. The first grouped write of a turn of the event loop is made at once
   * (a call alone waits for nothing); the ones that follow in the same turn are queued and made together, in
   * one write transaction, when the turn's I/O has been handled.
   */
  acquireSessionGrouped(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): GroupedWrite<AcquiredSession | BusySession> {
    this.#checkKeys('acquireSession', namespace, sessionId);
    return this.#queue(
      'acquireSession',
      namespace,
      sessionId,
      () => this.#acquire.immediate(namespace, sessionId, options),
      () => this.#acquireIn(namespace, sessionId, options),
    );
  }

  /** `commitTurn` for async callers, grouped as {@link SQLiteStore.acquireSessionGrouped}; durable when it settles. */
  commitTurnGrouped(namespace: string, sessionId: string, options: CommitOptions): GroupedWrite<number> {
    this.#checkKeys('commitTurn', namespace, sessionId);
    const turn = this.#run('commitTurn', namespace, sessionId, () => JSON.stringify(options.turn ?? {}));
    return this.#queue(
      'commitTurn',
      namespace,
      sessionId,
      () => this.#commit.immediate(namespace, sessionId, options, turn),
      () => this.#commitIn(namespace, sessionId, options, turn),
    );
  }

  readSession(namespace: string, sessionId: string): StoredSession | undefined {
    this.#checkKeys('readSession', namespace, sessionId);
    return this.#run('readSession', namespace, sessionId, () => this.#read.deferred(namespace, sessionId));
  }

  listSessions(namespace: string, options: ListOptions = {}): SessionPage {
    this.#open('listSessions');
    const limit = checkLimit(options.limit);
    return this.#run('listSessions', namespace, undefined, () => {
      const after = options.after === undefined ? Buffer.alloc(0) : sqliteKey(String(options.after));
      const rows = this.#sql.list.all(sqliteKey(namespace), after, limit + 1) as {
        session_id: Uint8Array;
        version: number;
        updated_at: number;
        expires_at: number | null;
      }[];
      const sessions: SessionInfo[] = rows.slice(0, limit).map((row) => ({
        sessionId: fromSqliteKey(row.session_id),
        version: row.version,
        updatedAt: row.updated_at,
        expiresAt: row.expires_at,
      }));
      return rows.length > limit ? { sessions, next: sessions.at(-1)!.sessionId } : { sessions };
    });
  }

  deleteSession(namespace: string, sessionId: string): boolean {
    this.#checkKeys('deleteSession', namespace, sessionId);
    return this.#run('deleteSession', namespace, sessionId, () =>
      this.#writing(() => {
        const ns = sqliteKey(namespace);
        const id = sqliteKey(sessionId);
        const row = this.#sql.session.get(ns, id) as SessionRow | undefined;
        this.#deleteSession(ns, id);
        return row !== undefined && row.version > 0 && !expired(row, this.#now());
      }),
    );
  }

  purgeExpired(namespace?: string): number {
    this.#open('purgeExpired');
    return this.#run('purgeExpired', namespace, undefined, () =>
      this.#writing(() => {
        const now = this.#now();
        const rows = (
          namespace === undefined
            ? this.#sql.expiredAll.all(now)
            : this.#sql.expiredIn.all(sqliteKey(namespace), now)
        ) as { namespace: Uint8Array; session_id: Uint8Array }[];
        for (const row of rows) this.#deleteSession(row.namespace, row.session_id);
        if (namespace === undefined) {
          this.#sql.pruneEntriesAll.run(now);
          this.#sql.pruneJournalsAll.run(now);
          this.#sql.pruneRunEventsAll.run(now);
          this.#sql.pruneRunsAll.run(now);
        } else {
          const ns = sqliteKey(namespace);
          this.#sql.pruneEntriesIn.run(ns, now, -1);
          this.#sql.pruneJournalsIn.run(ns, now, -1);
          this.#sql.pruneRunEvents.run(ns, now, -1);
          this.#sql.pruneRuns.run(ns, now, -1);
        }
        return rows.length;
      }),
    );
  }

  appendJournal(
    namespace: string,
    sessionId: string,
    callId: string,
    data: unknown,
    fence?: JournalFence,
  ): number {
    this.#checkKeys('appendJournal', namespace, sessionId, callId);
    const json = this.#run('appendJournal', namespace, sessionId, () => {
      const text = JSON.stringify(data);
      if (text === undefined) throw new TypeError(`${typeof data} cannot be stored as JSON`);
      return text;
    });
    return this.#run('appendJournal', namespace, sessionId, () =>
      this.#writing(() => {
        const now = this.#now();
        const ns = sqliteKey(namespace);
        const id = sqliteKey(sessionId);
        const call = sqliteKey(callId);
        let journal = this.#sql.journal.get(ns, call) as JournalRow | undefined;
        if (journal !== undefined && Buffer.compare(Buffer.from(journal.session_id), id) !== 0) {
          throw otherSession(this.description, 'appendJournal', namespace, callId);
        }
        if (fence !== undefined) this.#fenced(ns, id, fence, 'appendJournal', namespace, sessionId, now);
        if (journal !== undefined && gone(journal, now)) {
          this.#sql.deleteEntries.run(journal.id);
          this.#sql.deleteJournal.run(journal.id);
          journal = undefined;
        }
        if (journal === undefined) {
          this.#sql.pruneEntriesIn.run(ns, now, PRUNE_BATCH);
          this.#sql.pruneJournalsIn.run(ns, now, PRUNE_BATCH);
          const created = this.#sql.insertJournal.get(ns, call, id) as { id: number };
          journal = { id: created.id, session_id: id, entries: 0, finished: 0, expires_at: null };
        } else if (journal.finished !== 0) {
          // An entry after the finish reopens the journal (a failed call tried again).
          this.#sql.reopenJournal.run(journal.id);
        }
        this.#sql.insertEntry.run(journal.id, journal.entries, json);
        this.#sql.countEntry.run(journal.id);
        return journal.entries;
      }),
    );
  }

  readJournal(namespace: string, callId: string): StoredJournal | undefined {
    this.#checkKeys('readJournal', namespace, callId);
    return this.#run('readJournal', namespace, undefined, () =>
      this.#reading(() => {
        const journal = this.#sql.journal.get(sqliteKey(namespace), sqliteKey(callId)) as
          | JournalRow
          | undefined;
        if (journal === undefined || gone(journal, this.#now())) return undefined;
        const sessionId = fromSqliteKey(journal.session_id);
        const rows = this.#sql.entries.all(journal.id) as { seq: number; data: string }[];
        const entries: JournalEntry[] = rows.map((row) => ({
          seq: row.seq,
          data: this.#parse(
            row.data,
            'readJournal',
            namespace,
            sessionId,
            `journal ${JSON.stringify(callId)}`,
          ),
        }));
        return { callId, sessionId, entries, finished: journal.finished !== 0 };
      }),
    );
  }

  finishJournal(namespace: string, callId: string, options: FinishJournalOptions = {}): void {
    this.#checkKeys('finishJournal', namespace, callId);
    const retainMs = checkRetain(this.description, options.retainMs);
    const entry =
      options.entry === undefined
        ? undefined
        : this.#run('finishJournal', namespace, undefined, () => {
            const text = JSON.stringify(options.entry);
            if (text === undefined) throw new TypeError(`${typeof options.entry} cannot be stored as JSON`);
            return text;
          });
    this.#run('finishJournal', namespace, undefined, () =>
      this.#writing(() => {
        const now = this.#now();
        const ns = sqliteKey(namespace);
        const journal = this.#sql.journal.get(ns, sqliteKey(callId)) as JournalRow | undefined;
        if (journal === undefined || gone(journal, now)) return;
        if (options.fence !== undefined) {
          const sessionId = fromSqliteKey(journal.session_id);
          this.#fenced(ns, journal.session_id, options.fence, 'finishJournal', namespace, sessionId, now);
        }
        if (entry !== undefined) {
          this.#sql.insertEntry.run(journal.id, journal.entries, entry);
          this.#sql.countEntry.run(journal.id);
        }
        this.#sql.finishJournal.run(retainMs === undefined ? null : now + retainMs, journal.id);
      }),
    );
  }

  listJournals(
    namespace: string,
    sessionId: string,
    options: { unfinished?: boolean | undefined } = {},
  ): string[] {
    this.#checkKeys('listJournals', namespace, sessionId);
    return this.#run('listJournals', namespace, sessionId, () => {
      const rows = (
        options.unfinished
          ? this.#sql.unfinishedJournals.all(sqliteKey(namespace), sqliteKey(sessionId))
          : this.#sql.journals.all(sqliteKey(namespace), sqliteKey(sessionId))
      ) as { call_id: Uint8Array }[];
      return rows.map((row) => fromSqliteKey(row.call_id));
    });
  }

  listUnfinishedCalls(namespace: string, options: ListOptions = {}): UnfinishedCallPage {
    this.#checkKeys('listUnfinishedCalls', namespace);
    const limit = checkLimit(options.limit);
    return this.#run('listUnfinishedCalls', namespace, undefined, () => {
      const after = options.after === undefined ? Buffer.alloc(0) : sqliteKey(String(options.after));
      const rows = this.#sql.unfinishedCalls.all(sqliteKey(namespace), after, limit + 1) as {
        call_id: Uint8Array;
        session_id: Uint8Array;
      }[];
      const calls = rows.slice(0, limit).map((row) => ({
        callId: fromSqliteKey(row.call_id),
        sessionId: fromSqliteKey(row.session_id),
      }));
      return rows.length > limit ? { calls, next: calls.at(-1)!.callId } : { calls };
    });
  }

  deleteJournal(namespace: string, callId: string): boolean {
    this.#checkKeys('deleteJournal', namespace, callId);
    return this.#run('deleteJournal', namespace, undefined, () =>
      this.#writing(() => {
        const journal = this.#sql.journal.get(sqliteKey(namespace), sqliteKey(callId)) as
          | JournalRow
          | undefined;
        if (journal === undefined) return false;
        this.#sql.deleteEntries.run(journal.id);
        this.#sql.deleteJournal.run(journal.id);
        return !gone(journal, this.#now());
      }),
    );
  }

  createRun(namespace: string, runId: string, options: CreateRunOptions): CreatedRun {
    this.#checkKeys('createRun', namespace, runId, options?.sessionId);
    const status = checkRunStatus(this.description, 'createRun', options.status ?? 'queued');
    const ttlMs = checkRunTtl(this.description, 'createRun', options.ttlMs);
    const created = this.#run('createRun', namespace, options.sessionId, () =>
      this.#writing(() => {
        const now = this.#now();
        const ns = sqliteKey(namespace);
        const key = sqliteKey(runId);
        this.#sql.pruneRunEvents.run(ns, now, PRUNE_BATCH);
        this.#sql.pruneRuns.run(ns, now, PRUNE_BATCH);
        const existing = this.#liveRun(ns, key, now);
        if (existing !== undefined) return { created: false, run: this.#runRecord(existing) };
        const row = this.#sql.insertRun.get(
          ns,
          key,
          sqliteKey(options.sessionId),
          status,
          now,
          now,
          now + ttlMs,
        ) as RunRow;
        return { created: true, run: this.#runRecord(row) };
      }),
    );
    this.#runWatchers.watchers.notify(namespace, runId);
    return created;
  }

  /** Appends to runs' logs in one write transaction (each write on its own run; a run that is gone gets -1). */
  appendRuns(writes: readonly RunWrite[]): RunWritten[] {
    this.#open('appendRuns');
    for (const write of writes) checkRunWrite(this.description, write);
    if (writes.length === 0) return [];
    const written = this.#run('appendRuns', writes[0]!.namespace, undefined, () =>
      this.#writing(() => {
        const now = this.#now();
        const results: RunWritten[] = [];
        for (const write of writes) {
          const row = this.#liveRun(sqliteKey(write.namespace), sqliteKey(write.runId), now);
          if (row === undefined) {
            results.push({ lastSeq: -1, cancelRequested: false });
            continue;
          }
          let seq = row.last_seq;
          for (const event of write.events)
            this.#sql.insertRunEvent.run(row.id, ++seq, event.type, event.data);
          const expiresAt = now + write.ttlMs;
          if (write.status === undefined) this.#sql.runWritten.run(seq, now, expiresAt, row.id);
          else {
            this.#sql.runWrittenStatus.run(seq, now, expiresAt, write.status, write.result ?? null, row.id);
          }
          results.push({ lastSeq: seq, cancelRequested: row.cancel_requested !== 0 });
        }
        return results;
      }),
    );
    for (const write of writes) this.#runWatchers.watchers.notify(write.namespace, write.runId);
    return written;
  }

  readRun(namespace: string, runId: string): RunRecord | undefined {
    this.#checkKeys('readRun', namespace, runId);
    return this.#run('readRun', namespace, undefined, () => {
      const row = this.#sql.run.get(sqliteKey(namespace), sqliteKey(runId)) as RunRow | undefined;
      return row === undefined || row.expires_at <= this.#now() ? undefined : this.#runRecord(row);
    });
  }

  readRunEvents(namespace: string, runId: string, after: number, limit?: number): RunEventPage | undefined {
    this.#checkKeys('readRunEvents', namespace, runId);
    const most = checkRunRange(this.description, after, limit);
    return this.#run('readRunEvents', namespace, undefined, () =>
      this.#reading(() => {
        const row = this.#sql.run.get(sqliteKey(namespace), sqliteKey(runId)) as RunRow | undefined;
        if (row === undefined || row.expires_at <= this.#now()) return undefined;
        const events =
          after >= row.last_seq ? [] : (this.#sql.runEvents.all(row.id, after, most) as RunEvent[]);
        return { run: this.#runRecord(row), events };
      }),
    );
  }

  listRuns(namespace: string, sessionId: string, options: RunListOptions = {}): RunPage {
    this.#checkKeys('listRuns', namespace, sessionId);
    const limit = checkLimit(options.limit);
    return this.#run('listRuns', namespace, sessionId, () =>
      this.#reading(() => {
        const ns = sqliteKey(namespace);
        let from = options.newestFirst ? Number.MAX_SAFE_INTEGER : 0;
        if (options.after !== undefined) {
          const cursor = this.#sql.run.get(ns, sqliteKey(String(options.after))) as RunRow | undefined;
          if (cursor !== undefined) from = cursor.id;
        }
        const rows = (options.newestFirst ? this.#sql.runsBefore : this.#sql.runsAfter).all(
          ns,
          sqliteKey(sessionId),
          from,
          this.#now(),
          limit + 1,
        ) as RunRow[];
        const runs = rows.slice(0, limit).map((row) => this.#runRecord(row));
        return rows.length > limit ? { runs, next: runs.at(-1)!.runId } : { runs };
      }),
    );
  }

  cancelRun(namespace: string, runId: string): RunRecord | undefined {
    this.#checkKeys('cancelRun', namespace, runId);
    const found = this.#run('cancelRun', namespace, undefined, () =>
      this.#writing(() => {
        const now = this.#now();
        const row = this.#liveRun(sqliteKey(namespace), sqliteKey(runId), now);
        if (row === undefined) return undefined;
        if (row.status === 'waiting') {
          this.#sql.runCancelled.run(now, row.id);
          row.status = 'cancelled';
          row.updated_at = now;
        } else if (!runEnded(row.status)) {
          this.#sql.runCancelRequested.run(row.id);
          row.cancel_requested = 1;
        }
        return this.#runRecord(row);
      }),
    );
    this.#runWatchers.watchers.notify(namespace, runId);
    return found;
  }

  deleteRun(namespace: string, runId: string): boolean {
    this.#checkKeys('deleteRun', namespace, runId);
    const existed = this.#run('deleteRun', namespace, undefined, () =>
      this.#writing(() => {
        const row = this.#sql.run.get(sqliteKey(namespace), sqliteKey(runId)) as RunRow | undefined;
        if (row === undefined) return false;
        this.#sql.deleteRunEvents.run(row.id);
        this.#sql.deleteRun.run(row.id);
        return row.expires_at > this.#now();
      }),
    );
    this.#runWatchers.watchers.notify(namespace, runId);
    return existed;
  }

  watchRun(namespace: string, runId: string, listener: () => void): () => void {
    this.#checkKeys('watchRun', namespace, runId);
    return this.#runWatchers.watchers.watch(namespace, runId, listener);
  }

  close(): void {
    if (this.#closed) return;
    // Queued writes run first: a commit already asked for is not lost.
    if (this.#db.open) this.#flush();
    this.#closed = true;
    this.#runWatchers.release();
    if (this.#owned && this.#db.open) {
      try {
        this.#db.close();
      } catch (error) {
        throw this.#failure('close', undefined, undefined, error);
      }
    }
  }

  /** A run's row when it is there and has not expired (an expired one is deleted). Inside a write transaction. */
  #liveRun(ns: Buffer, runId: Buffer, now: number): RunRow | undefined {
    const row = this.#sql.run.get(ns, runId) as RunRow | undefined;
    if (row === undefined || row.expires_at > now) return row;
    this.#sql.deleteRunEvents.run(row.id);
    this.#sql.deleteRun.run(row.id);
    return undefined;
  }

  #runRecord(row: RunRow): RunRecord {
    return {
      runId: fromSqliteKey(row.run_id),
      sessionId: fromSqliteKey(row.session_id),
      status: row.status,
      lastSeq: row.last_seq,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      result: row.result ?? undefined,
      cancelRequested: row.cancel_requested !== 0,
      expiresAt: row.expires_at,
    };
  }

  /** The database's clock (see SQLITE_NOW): inside a write transaction, the writer's time. */
  #now(): number {
    return (this.#sql.now.get() as { now: number }).now;
  }

  /**
   * Throws the `StoreConflictError` of a fenced write whose owner no longer holds the session's lease; else
   * extends the lease. Inside the caller's write transaction.
   */
  #fenced(
    ns: Uint8Array,
    id: Uint8Array,
    fence: JournalFence,
    operation: string,
    namespace: string,
    sessionId: string,
    now: number,
  ): void {
    const row = this.#sql.session.get(ns, id) as SessionRow | undefined;
    if (row === undefined || expired(row, now) || row.lease_owner !== fence.owner) {
      throw fenceConflict(
        this.description,
        namespace,
        sessionId,
        operation,
        row !== undefined && expired(row, now),
      );
    }
    this.#sql.extendLease.run(now + fence.leaseMs, ns, id);
  }

  #acquireIn(namespace: string, sessionId: string, options: AcquireOptions): AcquiredSession | BusySession {
    const now = this.#now();
    const ns = sqliteKey(namespace);
    const id = sqliteKey(sessionId);
    let row = this.#sql.session.get(ns, id) as SessionRow | undefined;
    if (row !== undefined && expired(row, now)) {
      this.#deleteSession(ns, id);
      row = undefined;
    }
    if (row === undefined) {
      // A lease on a session the store does not have yet: a placeholder at version 0.
      this.#sql.insertPlaceholder.run(ns, id, now, options.owner, now + options.leaseMs);
      return { acquired: true, version: 0, state: options.knownVersion === 0 ? undefined : {} };
    }
    if (row.lease_owner !== null && row.lease_owner !== options.owner && row.lease_until > now) {
      return { acquired: false, until: row.lease_until };
    }
    // Read before the lease is written: a session that cannot be read fails before any write.
    const state =
      options.knownVersion === row.version
        ? undefined
        : this.#state(ns, id, row, namespace, sessionId, 'acquireSession');
    this.#sql.lease.run(options.owner, now + options.leaseMs, ns, id);
    return { acquired: true, version: row.version, state };
  }

  #commitIn(namespace: string, sessionId: string, options: CommitOptions, turn: string): number {
    const now = this.#now();
    const ns = sqliteKey(namespace);
    const id = sqliteKey(sessionId);
    const row = this.#sql.session.get(ns, id) as SessionRow | undefined;
    if (
      options.turnId !== undefined &&
      row !== undefined &&
      !expired(row, now) &&
      row.last_turn_id === options.turnId
    ) {
      // Committed already: the answer to the first try was lost.
      if (options.release !== false && row.lease_owner === options.owner)
        this.#sql.release.run(ns, id, options.owner);
      return row.version;
    }
    if (row === undefined || expired(row, now) || row.lease_owner !== options.owner) {
      const reason = row !== undefined && expired(row, now) ? 'expired' : 'lease';
      throw commitConflict(this.description, namespace, sessionId, options.version, { reason });
    }
    if (row.version !== options.version) {
      throw commitConflict(this.description, namespace, sessionId, options.version, {
        reason: 'version',
        actual: row.version,
      });
    }
    const version = row.version + 1;
    if (version - row.base_version > FOLD_AFTER) {
      // Fold the base, its turns and this one into a new base: reads stay bounded.
      const before = this.#state(ns, id, row, namespace, sessionId, 'commitTurn');
      const state = applyTurn(before, JSON.parse(turn) as SessionTurn);
      this.#sql.deleteTurns.run(ns, id);
      this.#sql.rebase.run(version, ns, id);
      this.#sql.writeBase.run(ns, id, JSON.stringify(state));
    } else {
      this.#sql.insertTurn.run(ns, id, version, turn);
    }
    const expiresAt = this.ttlMs === undefined ? null : now + this.ttlMs;
    const turnId = options.turnId ?? null;
    if (options.release === false) this.#sql.committed.run(version, now, expiresAt, turnId, ns, id);
    else this.#sql.committedReleased.run(version, now, expiresAt, turnId, ns, id);
    return version;
  }

  #readIn(namespace: string, sessionId: string): StoredSession | undefined {
    const now = this.#now();
    const ns = sqliteKey(namespace);
    const id = sqliteKey(sessionId);
    const row = this.#sql.session.get(ns, id) as SessionRow | undefined;
    if (row === undefined || row.version === 0 || expired(row, now)) return undefined;
    return {
      sessionId,
      version: row.version,
      updatedAt: row.updated_at,
      expiresAt: row.expires_at,
      state: this.#state(ns, id, row, namespace, sessionId, 'readSession'),
    };
  }

  /** The session's state: its base with the turns since folded on. Inside the caller's transaction. */
  #state(
    ns: Buffer,
    id: Buffer,
    row: SessionRow,
    namespace: string,
    sessionId: string,
    operation: string,
  ): StoredState {
    let state: unknown = {};
    if (row.base_version > 0) {
      const base = this.#sql.base.get(ns, id) as { state: string } | undefined;
      if (base === undefined) {
        throw this.#unreadable(
          operation,
          namespace,
          sessionId,
          `its base state (version ${row.base_version}) is missing`,
        );
      }
      state = this.#parse(base.state, operation, namespace, sessionId, 'base state');
      if (!isState(state)) {
        throw this.#unreadable(operation, namespace, sessionId, 'its base state is not a map of memories');
      }
    }
    const turns = this.#sql.turns.all(ns, id, row.base_version) as { version: number; turn: string }[];
    if (turns.length !== row.version - row.base_version) {
      throw this.#unreadable(
        operation,
        namespace,
        sessionId,
        `it is at version ${row.version} but holds ${turns.length} turns after its base (version ${row.base_version})`,
      );
    }
    for (const { version, turn: text } of turns) {
      const turn = this.#parse(text, operation, namespace, sessionId, `turn ${version}`);
      if (!isTurn(turn))
        throw this.#unreadable(operation, namespace, sessionId, `turn ${version} is not a turn`);
      state = applyTurn(state as StoredState, turn);
    }
    return state as StoredState;
  }

  #parse(text: string, operation: string, namespace: string, sessionId: string, what: string): unknown {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw this.#unreadable(
        operation,
        namespace,
        sessionId,
        `its ${what} is not JSON (${errorMessage(error)})`,
      );
    }
  }

  #unreadable(operation: string, namespace: string, sessionId: string, why: string): StoreError {
    return new StoreError({
      message: `${this.description}: session ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)} cannot be read: ${why}`,
      store: this.description,
      operation,
      sessionId,
    });
  }

  /** Deletes a session, its turns and its journals. Inside the caller's write transaction. */
  #deleteSession(ns: Uint8Array, id: Uint8Array): void {
    this.#sql.deleteSession.run(ns, id);
    this.#sql.deleteBase.run(ns, id);
    this.#sql.deleteTurns.run(ns, id);
    this.#sql.deleteSessionEntries.run(ns, id);
    this.#sql.deleteSessionJournals.run(ns, id);
  }

  /**
   * A grouped write: made at once (`direct`) when it is the turn's first and the last group was not several
   * writes, else queued (`body`).
   */
  #queue<T>(
    operation: string,
    namespace: string,
    sessionId: string,
    direct: () => T,
    body: () => T,
  ): GroupedWrite<T> {
    if (this.#queued.length === 0 && !this.#wroteThisTurn && !this.#busy) {
      this.#wroteThisTurn = true;
      setImmediate(() => {
        this.#wroteThisTurn = false;
      });
      let made: { value: T } | { error: unknown };
      try {
        made = { value: this.#run(operation, namespace, sessionId, direct) };
      } catch (error) {
        made = { error };
      }
      return {
        made,
        get result() {
          return 'error' in made ? Promise.reject(made.error) : Promise.resolve(made.value);
        },
        cancel: () => false,
      };
    }
    let write: QueuedWrite | undefined;
    const result = new Promise<T>((resolve, reject) => {
      write = {
        operation,
        namespace,
        sessionId,
        body,
        resolve: resolve as (value: unknown) => void,
        reject,
        cancelled: false,
      };
    });
    const queued = write!;
    this.#queued.push(queued);
    if (this.#queued.length === 1) setImmediate(() => this.#flush());
    return {
      result,
      cancel: () => {
        if (!this.#queued.includes(queued)) return false;
        queued.cancelled = true;
        return true;
      },
    };
  }

  /**
   * Runs the queued writes in one IMMEDIATE transaction. A write refused with a `StoreError` (a lease
   * another holds, a version that moved, a session that cannot be read) fails alone: those are thrown before
   * the write changes anything. Any other error (the database's) rolls the whole transaction back, and every
   * write gets it: none is written.
   */
  #flush(): void {
    const writes = this.#queued.filter((write) => !write.cancelled);
    this.#queued = [];
    this.#busy = writes.length > 1;
    if (writes.length === 0) return;
    if (this.#closed) {
      for (const write of writes) {
        write.reject(
          new StoreError({
            message: `${this.description} is closed`,
            store: this.description,
            operation: write.operation,
          }),
        );
      }
      return;
    }
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      this.#writing(() => {
        for (const write of writes) {
          try {
            outcomes.push({ ok: true, value: write.body() });
          } catch (error) {
            if (!(error instanceof StoreError)) throw error;
            outcomes.push({ ok: false, value: error });
          }
        }
      });
    } catch (error) {
      for (const write of writes) write.reject(this.#asStoreError(write, error));
      return;
    }
    for (const [index, write] of writes.entries()) {
      const outcome = outcomes[index]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(this.#asStoreError(write, outcome.value));
    }
  }

  #asStoreError(write: QueuedWrite, error: unknown): StoreError {
    return error instanceof StoreError
      ? error
      : this.#failure(write.operation, write.namespace, write.sessionId, error);
  }

  #writing<T>(body: () => T): T {
    return this.#tx.immediate(body) as T;
  }

  #reading<T>(body: () => T): T {
    return this.#tx.deferred(body) as T;
  }

  /** Runs a call, turning a driver's error into a `StoreError` naming the store, operation and session. */
  #run<T>(operation: string, namespace: string | undefined, sessionId: string | undefined, body: () => T): T {
    try {
      return body();
    } catch (error) {
      if (error instanceof StoreError) throw error;
      throw this.#failure(operation, namespace, sessionId, error);
    }
  }

  #failure(
    operation: string,
    namespace: string | undefined,
    sessionId: string | undefined,
    error: unknown,
  ): StoreError {
    const subject =
      sessionId === undefined
        ? namespace === undefined
          ? ''
          : ` of ${JSON.stringify(namespace)}`
        : ` ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)}`;
    return new StoreError({
      message: `${this.description}: ${operation}${subject} failed: ${errorMessage(error)}`,
      store: this.description,
      operation,
      sessionId,
      cause: error,
    });
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

type Statements = ReturnType<typeof prepare>;

/** Every statement the store runs, prepared once. */
function prepare(db: SqliteDatabase, prefix: string) {
  const t = sqliteTables(prefix);
  const where = 'namespace = ? AND session_id = ?';
  const q = (sql: string): SqliteStatement => db.prepare(sql);
  return {
    now: q(`SELECT ${SQLITE_NOW} AS now`),
    session: q(
      `SELECT version, updated_at, expires_at, lease_owner, lease_until, base_version, last_turn_id FROM ${t.sessions} WHERE ${where}`,
    ),
    base: q(`SELECT state FROM ${t.bases} WHERE ${where}`),
    turns: q(`SELECT version, turn FROM ${t.turns} WHERE ${where} AND version > ? ORDER BY version`),
    insertPlaceholder: q(
      `INSERT INTO ${t.sessions} (namespace, session_id, version, updated_at, expires_at, lease_owner, lease_until, base_version)
       VALUES (?, ?, 0, ?, NULL, ?, ?, 0)`,
    ),
    lease: q(`UPDATE ${t.sessions} SET lease_owner = ?, lease_until = ? WHERE ${where}`),
    // $1 leaseMs, then namespace, session, owner.
    renew: q(
      `UPDATE ${t.sessions} SET lease_until = ${SQLITE_NOW} + ? WHERE ${where} AND lease_owner = ?
       AND (expires_at IS NULL OR expires_at > ${SQLITE_NOW})`,
    ),
    extendLease: q(`UPDATE ${t.sessions} SET lease_until = ? WHERE ${where}`),
    release: q(
      `UPDATE ${t.sessions} SET lease_owner = NULL, lease_until = 0 WHERE ${where} AND lease_owner = ? AND version > 0`,
    ),
    dropPlaceholder: q(`DELETE FROM ${t.sessions} WHERE ${where} AND lease_owner = ? AND version = 0`),
    insertTurn: q(`INSERT INTO ${t.turns} (namespace, session_id, version, turn) VALUES (?, ?, ?, ?)`),
    deleteTurns: q(`DELETE FROM ${t.turns} WHERE ${where}`),
    rebase: q(`UPDATE ${t.sessions} SET base_version = ? WHERE ${where}`),
    writeBase: q(
      `INSERT INTO ${t.bases} (namespace, session_id, state) VALUES (?, ?, ?)
       ON CONFLICT (namespace, session_id) DO UPDATE SET state = excluded.state`,
    ),
    deleteBase: q(`DELETE FROM ${t.bases} WHERE ${where}`),
    committed: q(
      `UPDATE ${t.sessions} SET version = ?, updated_at = ?, expires_at = ?, last_turn_id = ? WHERE ${where}`,
    ),
    committedReleased: q(
      `UPDATE ${t.sessions} SET version = ?, updated_at = ?, expires_at = ?, last_turn_id = ?, lease_owner = NULL, lease_until = 0 WHERE ${where}`,
    ),
    list: q(
      `SELECT session_id, version, updated_at, expires_at FROM ${t.sessions}
       WHERE namespace = ? AND session_id > ? AND version > 0 AND (expires_at IS NULL OR expires_at > ${SQLITE_NOW})
       ORDER BY session_id LIMIT ?`,
    ),
    deleteSession: q(`DELETE FROM ${t.sessions} WHERE ${where}`),
    expiredAll: q(`SELECT namespace, session_id FROM ${t.sessions} WHERE expires_at <= ?`),
    expiredIn: q(`SELECT namespace, session_id FROM ${t.sessions} WHERE namespace = ? AND expires_at <= ?`),
    deleteSessionEntries: q(
      `DELETE FROM ${t.entries} WHERE journal_id IN (SELECT id FROM ${t.journals} WHERE ${where})`,
    ),
    deleteSessionJournals: q(`DELETE FROM ${t.journals} WHERE ${where}`),
    journal: q(
      `SELECT id, session_id, entries, finished, expires_at FROM ${t.journals} WHERE namespace = ? AND call_id = ?`,
    ),
    reopenJournal: q(`UPDATE ${t.journals} SET finished = 0, expires_at = NULL WHERE id = ?`),
    // $1 namespace, $2 now, $3 at most how many (-1: all).
    pruneEntriesIn: q(
      `DELETE FROM ${t.entries} WHERE journal_id IN (SELECT id FROM ${t.journals}
       WHERE namespace = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?)`,
    ),
    pruneJournalsIn: q(
      `DELETE FROM ${t.journals} WHERE id IN (SELECT id FROM ${t.journals}
       WHERE namespace = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?)`,
    ),
    pruneEntriesAll: q(
      `DELETE FROM ${t.entries} WHERE journal_id IN (SELECT id FROM ${t.journals} WHERE expires_at <= ?)`,
    ),
    pruneJournalsAll: q(`DELETE FROM ${t.journals} WHERE expires_at <= ?`),
    unfinishedCalls: q(
      `SELECT call_id, session_id FROM ${t.journals} WHERE namespace = ? AND finished = 0 AND call_id > ?
       ORDER BY call_id LIMIT ?`,
    ),
    insertJournal: q(
      `INSERT INTO ${t.journals} (namespace, call_id, session_id, entries, finished) VALUES (?, ?, ?, 0, 0) RETURNING id`,
    ),
    insertEntry: q(`INSERT INTO ${t.entries} (journal_id, seq, data) VALUES (?, ?, ?)`),
    countEntry: q(`UPDATE ${t.journals} SET entries = entries + 1 WHERE id = ?`),
    entries: q(`SELECT seq, data FROM ${t.entries} WHERE journal_id = ? ORDER BY seq`),
    finishJournal: q(`UPDATE ${t.journals} SET finished = 1, expires_at = ? WHERE id = ?`),
    journals: q(
      `SELECT call_id FROM ${t.journals} WHERE ${where} AND (expires_at IS NULL OR expires_at > ${SQLITE_NOW}) ORDER BY id`,
    ),
    unfinishedJournals: q(`SELECT call_id FROM ${t.journals} WHERE ${where} AND finished = 0 ORDER BY id`),
    deleteEntries: q(`DELETE FROM ${t.entries} WHERE journal_id = ?`),
    run: q(
      `SELECT id, run_id, session_id, status, last_seq, created_at, updated_at, result, cancel_requested, expires_at
       FROM ${t.runs} WHERE namespace = ? AND run_id = ?`,
    ),
    insertRun: q(
      `INSERT INTO ${t.runs} (namespace, run_id, session_id, status, last_seq, created_at, updated_at, result, cancel_requested, expires_at)
       VALUES (?, ?, ?, ?, 0, ?, ?, NULL, 0, ?)
       RETURNING id, run_id, session_id, status, last_seq, created_at, updated_at, result, cancel_requested, expires_at`,
    ),
    insertRunEvent: q(`INSERT INTO ${t.runEvents} (run, seq, type, data) VALUES (?, ?, ?, ?)`),
    runWritten: q(`UPDATE ${t.runs} SET last_seq = ?, updated_at = ?, expires_at = ? WHERE id = ?`),
    runWrittenStatus: q(
      `UPDATE ${t.runs} SET last_seq = ?, updated_at = ?, expires_at = ?, status = ?, result = ? WHERE id = ?`,
    ),
    runEvents: q(`SELECT seq, type, data FROM ${t.runEvents} WHERE run = ? AND seq > ? ORDER BY seq LIMIT ?`),
    // $1 namespace, $2 session, $3 the cursor's id, $4 now, $5 limit + 1.
    runsAfter: q(
      `SELECT id, run_id, session_id, status, last_seq, created_at, updated_at, result, cancel_requested, expires_at
       FROM ${t.runs} WHERE namespace = ? AND session_id = ? AND id > ? AND expires_at > ? ORDER BY id LIMIT ?`,
    ),
    runsBefore: q(
      `SELECT id, run_id, session_id, status, last_seq, created_at, updated_at, result, cancel_requested, expires_at
       FROM ${t.runs} WHERE namespace = ? AND session_id = ? AND id < ? AND expires_at > ? ORDER BY id DESC LIMIT ?`,
    ),
    runCancelled: q(`UPDATE ${t.runs} SET status = 'cancelled', updated_at = ? WHERE id = ?`),
    runCancelRequested: q(`UPDATE ${t.runs} SET cancel_requested = 1 WHERE id = ?`),
    deleteRunEvents: q(`DELETE FROM ${t.runEvents} WHERE run = ?`),
    deleteRun: q(`DELETE FROM ${t.runs} WHERE id = ?`),
    // $1 namespace, $2 now, $3 at most how many (-1: all).
    pruneRunEvents: q(
      `DELETE FROM ${t.runEvents} WHERE run IN (SELECT id FROM ${t.runs}
       WHERE namespace = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?)`,
    ),
    pruneRuns: q(
      `DELETE FROM ${t.runs} WHERE id IN (SELECT id FROM ${t.runs}
       WHERE namespace = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?)`,
    ),
    pruneRunEventsAll: q(
      `DELETE FROM ${t.runEvents} WHERE run IN (SELECT id FROM ${t.runs} WHERE expires_at <= ?)`,
    ),
    pruneRunsAll: q(`DELETE FROM ${t.runs} WHERE expires_at <= ?`),
    deleteJournal: q(`DELETE FROM ${t.journals} WHERE id = ?`),
  };
}

function expired(row: SessionRow, now: number): boolean {
  return row.expires_at !== null && row.expires_at <= now;
}

/** True for a finished journal past its retention. */
function gone(journal: JournalRow, now: number): boolean {
  return journal.expires_at !== null && journal.expires_at <= now;
}

function isDatabase(value: unknown): value is SqliteDatabase {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as SqliteDatabase).prepare === 'function' &&
    typeof (value as SqliteDatabase).transaction === 'function' &&
    (value as SqliteDatabase).open === true
  );
}

function isRecordOfArrays(value: unknown): value is StoredState {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  for (const messages of Object.values(value)) if (!Array.isArray(messages)) return false;
  return true;
}

function isState(value: unknown): value is StoredState {
  return isRecordOfArrays(value);
}

function isTurn(value: unknown): value is SessionTurn {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { append, replace } = value as SessionTurn;
  return (
    (append === undefined || isRecordOfArrays(append)) && (replace === undefined || isRecordOfArrays(replace))
  );
}
