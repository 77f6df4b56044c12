import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { ConfigurationError, missingPeer, type StoreConflictError, StoreError } from '../schema/errors';
import { errorMessage } from '../utils/text';
import { checkLimit, checkStoreKey, checkTtl, otherSession } from './memory-store';
import {
  POSTGRES_SCHEMA_VERSION,
  type PostgresStatementName,
  type PostgresTables,
  postgresMigrations,
  postgresStatements,
  postgresTables,
} from './postgres-schema';
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
  commitConflict,
  type FinishJournalOptions,
  fenceConflict,
  type JournalFence,
  type ListOptions,
  type RunEventPage,
  type RunListOptions,
  type RunLogStore,
  type RunPage,
  type RunRecord,
  type RunStatus,
  type RunWrite,
  type RunWritten,
  type SessionInfo,
  type SessionPage,
  type SessionStore,
  type SessionTurn,
  type StoredJournal,
  type StoredSession,
  type StoredState,
  type StoreOptions,
  type UnfinishedCallPage,
} from './types';

/** Options of {@link PostgresStore}: a connection string, or a pool the caller owns (and ends). */
export type PostgresStoreOptions = StoreOptions & {
  /** Tables are named `<tablePrefix>sessions`, ...: several apps can share one database. @default 'lagent_' */
  tablePrefix?: string | undefined;
  /** The PostgreSQL schema of the tables (created when missing). @default the connection's search path */
  schema?: string | undefined;
  /**
   * How long connecting and each statement may take before the call fails with a `StoreError`, in ms.
   * @default 5000
   */
  timeoutMs?: number | undefined;
} & (
    | { connectionString: string; pool?: undefined }
    | {
        /** A `pg` Pool the caller owns: `close()` leaves it open. Give it an `'error'` listener. */
        pool: Pool;
        connectionString?: undefined;
      }
  );

/** Turns kept after a session's base before a commit folds them into a new base. */
const FOLD_AFTER = 32;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,40}$/;

/**
 * A session store on PostgreSQL (`pg`, an optional peer loaded on first use). Asynchronous: every method
 * returns a promise, so async agents use it.
 *
 * Each session is a row (version, lease, expiry, and a base state) plus one row per turn committed since
 * the base: a commit writes only its turn, in one statement that checks the lease and the version; every
 * 32 turns they are folded into a new base. Times are the server's clock, shared by every process. The
 * tables are created on first use (and upgraded by later versions of this code, under an advisory lock);
 * a database written by a newer version is refused. PostgreSQL text holds neither NUL characters nor lone
 * surrogates: keys with them (or starting with U+0001) are stored as U+0001 and the hex of their UTF-16
 * code units, so every key the other stores take is kept exactly (such keys list after the others).
 *
 * @example
 * const store = new PostgresStore({ connectionString: 'postgres://app@127.0.0.1/app', ttlMs: 86_400_000 });
 * const agent = new AsyncAgent({ llm, memory: { store } });
 */
export class PostgresStore implements SessionStore, RunLogStore {
  readonly synchronous = false as const;
  readonly description: string;
  readonly ttlMs: number | undefined;
  readonly #options: PostgresStoreOptions;
  readonly #tables: PostgresTables;
  readonly #statements: Record<PostgresStatementName, string>;
  /** Prepared statement names: unique to these tables, as a shared pool may serve several stores. */
  readonly #names: string;
  readonly #timeoutMs: number;
  #pool: Pool | undefined;
  #ready: Promise<Pool> | undefined;
  #closed = false;
  /** Run writes are notified (LISTEN / NOTIFY): watchers hear every process's. */
  readonly watchesOtherProcesses = true;
  readonly #runWatchers = new RunWatchers();
  /** The watched runs by the notice their writes send. */
  readonly #watched = new Map<string, { namespace: string; runId: string; count: number }>();
  /** The connection that listens for run writes (taken from the pool by the first `watchRun`). */
  #listener: Promise<PoolClient | undefined> | undefined;

  constructor(options: PostgresStoreOptions) {
    if (options.connectionString === undefined && options.pool === undefined) {
      throw new ConfigurationError({ message: 'PostgresStore needs a connectionString or a pool' });
    }
    this.ttlMs = checkTtl(options.ttlMs);
    const prefix = options.tablePrefix ?? 'lagent_';
    if (!IDENTIFIER.test(prefix)) {
      throw new ConfigurationError({
        message: `PostgresStore tablePrefix must be letters, digits and _ (not starting with a digit), got ${JSON.stringify(prefix)}`,
      });
    }
    if (options.schema !== undefined && !IDENTIFIER.test(options.schema)) {
      throw new ConfigurationError({
        message: `PostgresStore schema must be letters, digits and _ (not starting with a digit), got ${JSON.stringify(options.schema)}`,
      });
    }
    const timeoutMs = options.timeoutMs ?? 5000;
    if (!(Number.isSafeInteger(timeoutMs) && timeoutMs > 0)) {
      throw new ConfigurationError({
        message: `timeoutMs must be a positive integer (ms), got ${timeoutMs}`,
      });
    }
    this.#timeoutMs = timeoutMs;
    this.#options = options;
    this.#tables = postgresTables(prefix, options.schema);
    this.#statements = postgresStatements(this.#tables);
    this.#names = `lagent_${createHash('sha256').update(this.#tables.sessions).digest('hex').slice(0, 12)}`;
    this.description = `PostgresStore(${options.connectionString === undefined ? 'pool' : safeUrl(options.connectionString)})`;
  }

  async acquireSession(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): Promise<AcquiredSession | BusySession> {
    return this.#call('acquireSession', namespace, sessionId, async (query) => {
      for (let attempt = 0; ; attempt++) {
        const [row] = await query('acquire', [
          pgKey(namespace),
          pgKey(sessionId),
          options.owner,
          options.leaseMs,
          options.knownVersion ?? null,
        ]);
        if (row !== undefined) {
          const version = row.version as number;
          if (options.knownVersion === version) return { acquired: true, version, state: undefined };
          let state: StoredState;
          try {
            state = await this.#fold(query, namespace, sessionId, row);
          } catch (error) {
            // The lease taken for a state that cannot be read is given back.
            await query('release', [pgKey(namespace), pgKey(sessionId), options.owner]).catch(() => {});
            throw error;
          }
          return { acquired: true, version, state };
        }
        const [held] = await query('lease', [pgKey(namespace), pgKey(sessionId)]);
        if (held !== undefined) {
          const now = Number(held.now);
          if (held.expires_at === null || Number(held.expires_at) > now) {
            return { acquired: false, until: Number(held.lease_until) };
          }
          // Expired: the session is gone (with its journals) and starts again at version 0.
          await query('dropExpired', [pgKey(namespace), pgKey(sessionId)]);
        }
        if (attempt < 3) continue;
        throw new Error('the session changed under every attempt to acquire it');
      }
    });
  }

  async renewLease(namespace: string, sessionId: string, owner: string, leaseMs: number): Promise<boolean> {
    return this.#call('renewLease', namespace, sessionId, async (query) => {
      return (await query('renew', [pgKey(namespace), pgKey(sessionId), owner, leaseMs])).length > 0;
    });
  }

  async releaseSession(namespace: string, sessionId: string, owner: string): Promise<void> {
    await this.#call('releaseSession', namespace, sessionId, (query) =>
      query('release', [pgKey(namespace), pgKey(sessionId), owner]),
    );
  }

  async commitTurn(namespace: string, sessionId: string, options: CommitOptions): Promise<number> {
    return this.#call('commitTurn', namespace, sessionId, async (query) => {
      const turn = json(options.turn, 'the turn');
      const [row] = await query('commit', [
        pgKey(namespace),
        pgKey(sessionId),
        options.owner,
        options.version,
        options.release !== false,
        this.ttlMs ?? null,
        turn,
        options.turnId ?? null,
      ]);
      if (row === undefined) {
        const refused = await this.#conflict(query, namespace, sessionId, options);
        if (typeof refused === 'number') return refused;
        throw refused;
      }
      const version = row.version as number;
      if (version - (row.base_version as number) >= FOLD_AFTER) {
        // Folding does not change the session's state: a failure here leaves the turn committed.
        await this.#foldNow(query, namespace, sessionId).catch(() => {});
      }
      return version;
    });
  }

  async readSession(namespace: string, sessionId: string): Promise<StoredSession | undefined> {
    return this.#call('readSession', namespace, sessionId, async (query) => {
      const [row] = await query('read', [pgKey(namespace), pgKey(sessionId)]);
      if (row === undefined) return undefined;
      return {
        ...info(row, sessionId),
        state: this.#state(namespace, sessionId, row),
      };
    });
  }

  async listSessions(namespace: string, options: ListOptions = {}): Promise<SessionPage> {
    return this.#call('listSessions', namespace, undefined, async (query) => {
      const limit = checkLimit(options.limit);
      if (options.after !== undefined) checkStoreKey(this.description, 'listSessions', options.after);
      const after = options.after === undefined ? null : pgKey(options.after);
      const rows = await query('list', [pgKey(namespace), after, limit + 1]);
      const sessions = rows.slice(0, limit).map((row) => info(row, fromPgKey(row.session_id as string)));
      return rows.length > limit ? { sessions, next: sessions.at(-1)!.sessionId } : { sessions };
    });
  }

  async deleteSession(namespace: string, sessionId: string): Promise<boolean> {
    return this.#call('deleteSession', namespace, sessionId, async (query) => {
      const [row] = await query('delete', [pgKey(namespace), pgKey(sessionId)]);
      return row?.existed === true;
    });
  }

  async purgeExpired(namespace?: string): Promise<number> {
    return this.#call('purgeExpired', namespace, undefined, async (query) => {
      const ns = namespace === undefined ? null : pgKey(namespace);
      const [row] = await query('purge', [ns]);
      await query('pruneJournals', [ns]);
      await query('pruneRuns', [ns]);
      return row?.purged as number;
    });
  }

  async appendJournal(
    namespace: string,
    sessionId: string,
    callId: string,
    data: unknown,
    fence?: JournalFence,
  ): Promise<number> {
    return this.#call(
      'appendJournal',
      namespace,
      sessionId,
      async (query) => {
        const values = [
          pgKey(namespace),
          pgKey(sessionId),
          pgKey(callId),
          json(data, 'the entry'),
          fence?.owner ?? null,
          fence?.leaseMs ?? null,
        ];
        for (let attempt = 0; ; attempt++) {
          const [row] = await query('appendJournal', values);
          if (row!.seq !== null) return row!.seq as number;
          if (!row!.leased) throw await this.#fenceRefused(query, namespace, sessionId, 'appendJournal');
          const [journal] = await query('journalOf', [pgKey(namespace), pgKey(callId)]);
          if (journal !== undefined && fromPgKey(journal.session_id as string) !== sessionId) {
            throw otherSession(this.description, 'appendJournal', namespace, callId);
          }
          // A journal of this id past its retention: it goes, and this entry starts a new one.
          if (journal?.gone === true) await query('deleteGone', [pgKey(namespace), pgKey(callId)]);
          if (attempt >= 3) throw new Error('the journal changed under every attempt to append to it');
        }
      },
      callId,
    );
  }

  async readJournal(namespace: string, callId: string): Promise<StoredJournal | undefined> {
    return this.#call(
      'readJournal',
      namespace,
      undefined,
      async (query) => {
        const [row] = await query('readJournal', [pgKey(namespace), pgKey(callId)]);
        if (row === undefined) return undefined;
        const sessionId = fromPgKey(row.session_id as string);
        const entries = (row.entries as string[]).map((data, seq) => {
          try {
            return { seq, data: JSON.parse(data) as unknown };
          } catch (error) {
            throw this.#unreadable(
              'readJournal',
              namespace,
              sessionId,
              `journal ${JSON.stringify(callId)}`,
              error,
            );
          }
        });
        return { callId, sessionId, entries, finished: row.finished as boolean };
      },
      callId,
    );
  }

  async finishJournal(namespace: string, callId: string, options: FinishJournalOptions = {}): Promise<void> {
    await this.#call(
      'finishJournal',
      namespace,
      undefined,
      async (query) => {
        const retainMs = checkRetain(this.description, options.retainMs);
        const { entry, fence } = options;
        const [row] = await query('finishJournal', [
          pgKey(namespace),
          pgKey(callId),
          entry === undefined ? null : json(entry, 'the entry'),
          retainMs ?? null,
          fence?.owner ?? null,
          fence?.leaseMs ?? null,
        ]);
        if (row!.found && !row!.done) {
          const sessionId = fromPgKey(row!.session_id as string);
          throw await this.#fenceRefused(query, namespace, sessionId, 'finishJournal');
        }
      },
      callId,
    );
  }

  async listJournals(
    namespace: string,
    sessionId: string,
    options: { unfinished?: boolean | undefined } = {},
  ): Promise<string[]> {
    return this.#call('listJournals', namespace, sessionId, async (query) => {
      const rows = await query('listJournals', [
        pgKey(namespace),
        pgKey(sessionId),
        options.unfinished === true,
      ]);
      return rows.map((row) => fromPgKey(row.call_id as string));
    });
  }

  async listUnfinishedCalls(namespace: string, options: ListOptions = {}): Promise<UnfinishedCallPage> {
    return this.#call('listUnfinishedCalls', namespace, undefined, async (query) => {
      const limit = checkLimit(options.limit);
      if (options.after !== undefined) checkStoreKey(this.description, 'listUnfinishedCalls', options.after);
      const after = options.after === undefined ? null : pgKey(options.after);
      const rows = await query('unfinishedCalls', [pgKey(namespace), after, limit + 1]);
      const calls = rows.slice(0, limit).map((row) => ({
        callId: fromPgKey(row.call_id as string),
        sessionId: fromPgKey(row.session_id as string),
      }));
      return rows.length > limit ? { calls, next: calls.at(-1)!.callId } : { calls };
    });
  }

  async deleteJournal(namespace: string, callId: string): Promise<boolean> {
    return this.#call(
      'deleteJournal',
      namespace,
      undefined,
      async (query) => {
        const [row] = await query('deleteJournal', [pgKey(namespace), pgKey(callId)]);
        return row?.existed === true;
      },
      callId,
    );
  }

  async createRun(namespace: string, runId: string, options: CreateRunOptions): Promise<CreatedRun> {
    return this.#call(
      'createRun',
      namespace,
      options?.sessionId,
      async (query) => {
        const status = checkRunStatus(this.description, 'createRun', options.status ?? 'queued');
        const ttlMs = checkRunTtl(this.description, 'createRun', options.ttlMs);
        const ns = pgKey(namespace);
        const id = pgKey(runId);
        for (let attempt = 0; ; attempt++) {
          await query('runDropExpired', [ns, id]);
          const [row] = await query('runCreate', [
            ns,
            id,
            pgKey(options.sessionId),
            status,
            ttlMs,
            this.#runChannel,
            runNotice(ns, id),
          ]);
          this.#runWatchers.notify(namespace, runId);
          if (row !== undefined) return { created: true, run: runRecordOf(row) };
          const [existing] = await query('runRead', [ns, id]);
          if (existing !== undefined) return { created: false, run: runRecordOf(existing) };
          // It expired between the two statements: dropped, and created afresh.
          if (attempt >= 3) throw new Error('the run changed under every attempt to create it');
        }
      },
      runId,
    );
  }

  async appendRuns(writes: readonly RunWrite[]): Promise<RunWritten[]> {
    return this.#call('appendRuns', writes[0]?.namespace, undefined, async (query) => {
      for (const write of writes) checkRunWrite(this.description, write);
      // Writes of one run in order; different runs at once.
      const chains = new Map<string, Promise<unknown>>();
      const written = writes.map((write) => {
        const ns = pgKey(write.namespace);
        const id = pgKey(write.runId);
        const key = `${ns}\u0000${id}`;
        const done = (chains.get(key) ?? Promise.resolve()).then(async () => {
          const [row] = await query('runAppend', [
            ns,
            id,
            write.events.map((event) => event.type),
            write.ttlMs,
            write.status ?? null,
            write.result ?? null,
            write.events.map((event) => event.data),
            this.#runChannel,
            runNotice(ns, id),
          ]);
          this.#runWatchers.notify(write.namespace, write.runId);
          return row === undefined
            ? { lastSeq: -1, cancelRequested: false }
            : { lastSeq: row.last_seq as number, cancelRequested: row.cancel_requested as boolean };
        });
        chains.set(
          key,
          done.catch(() => {}),
        );
        return done;
      });
      return Promise.all(written);
    });
  }

  async readRun(namespace: string, runId: string): Promise<RunRecord | undefined> {
    return this.#call(
      'readRun',
      namespace,
      undefined,
      async (query) => {
        const [row] = await query('runRead', [pgKey(namespace), pgKey(runId)]);
        return row === undefined ? undefined : runRecordOf(row);
      },
      runId,
    );
  }

  async readRunEvents(
    namespace: string,
    runId: string,
    after: number,
    limit?: number,
  ): Promise<RunEventPage | undefined> {
    return this.#call(
      'readRunEvents',
      namespace,
      undefined,
      async (query) => {
        const most = checkRunRange(this.description, after, limit);
        const [row] = await query('runEvents', [pgKey(namespace), pgKey(runId), after, most]);
        if (row === undefined) return undefined;
        const types = row.types as string[];
        const data = row.data as string[];
        return {
          run: runRecordOf(row),
          events: types.map((type, i) => ({ seq: after + i + 1, type, data: data[i]! })),
        };
      },
      runId,
    );
  }

  async listRuns(namespace: string, sessionId: string, options: RunListOptions = {}): Promise<RunPage> {
    return this.#call('listRuns', namespace, sessionId, async (query) => {
      const limit = checkLimit(options.limit);
      if (options.after !== undefined) checkStoreKey(this.description, 'listRuns', options.after);
      const rows = await query(options.newestFirst ? 'runsBefore' : 'runsAfter', [
        pgKey(namespace),
        pgKey(sessionId),
        options.after === undefined ? null : pgKey(options.after),
        limit + 1,
      ]);
      const runs = rows.slice(0, limit).map(runRecordOf);
      return rows.length > limit ? { runs, next: runs.at(-1)!.runId } : { runs };
    });
  }

  async cancelRun(namespace: string, runId: string): Promise<RunRecord | undefined> {
    return this.#call(
      'cancelRun',
      namespace,
      undefined,
      async (query) => {
        const ns = pgKey(namespace);
        const id = pgKey(runId);
        const [row] = await query('runCancel', [ns, id, this.#runChannel, runNotice(ns, id)]);
        this.#runWatchers.notify(namespace, runId);
        return row === undefined ? undefined : runRecordOf(row);
      },
      runId,
    );
  }

  async deleteRun(namespace: string, runId: string): Promise<boolean> {
    return this.#call(
      'deleteRun',
      namespace,
      undefined,
      async (query) => {
        const ns = pgKey(namespace);
        const id = pgKey(runId);
        const [row] = await query('runDelete', [ns, id, this.#runChannel, runNotice(ns, id)]);
        this.#runWatchers.notify(namespace, runId);
        return row?.existed === true;
      },
      runId,
    );
  }

  /**
   * Watches a run: told of this process's writes at once, of other processes' through PostgreSQL's NOTIFY (a
   * pooled connection LISTENs from the first watch on; while it cannot, readers fall back to polling).
   */
  watchRun(namespace: string, runId: string, listener: () => void): () => void {
    if (this.#closed) {
      throw new StoreError({
        message: `${this.description} is closed`,
        store: this.description,
        operation: 'watchRun',
      });
    }
    checkStoreKey(this.description, 'watchRun', namespace);
    checkStoreKey(this.description, 'watchRun', runId);
    const notice = runNotice(pgKey(namespace), pgKey(runId));
    const watched = this.#watched.get(notice);
    if (watched === undefined) this.#watched.set(notice, { namespace, runId, count: 1 });
    else watched.count++;
    this.#listener ??= this.#listen();
    const stop = this.#runWatchers.watch(namespace, runId, listener);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      stop();
      const entry = this.#watched.get(notice);
      if (entry !== undefined && --entry.count === 0) this.#watched.delete(notice);
    };
  }

  /** The channel run writes are notified on: one per store's tables. */
  get #runChannel(): string {
    return `${this.#names}_runs`;
  }

  async #listen(): Promise<PoolClient | undefined> {
    let client: PoolClient | undefined;
    try {
      const pool = await this.#open();
      client = await pool.connect();
      const held = client;
      const lost = () => {
        // Listened no more: readers poll; the next watch listens again.
        if (this.#listener !== undefined) this.#listener = undefined;
        held.release(true);
      };
      held.on('error', lost);
      held.on('notification', (message) => {
        const entry = this.#watched.get(message.payload ?? '');
        if (entry !== undefined) this.#runWatchers.notify(entry.namespace, entry.runId);
      });
      await held.query(`LISTEN "${this.#runChannel}"`);
      if (this.#closed) {
        held.release(true);
        return undefined;
      }
      // What changed before this was not heard: every watcher reads again.
      this.#runWatchers.notifyAll();
      return held;
    } catch {
      client?.release(true);
      this.#listener = undefined;
      return undefined;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#runWatchers.clear();
    const listener = this.#listener;
    this.#listener = undefined;
    (await listener?.catch(() => undefined))?.release(true);
    const ready = this.#ready;
    this.#ready = undefined;
    if (this.#options.pool !== undefined) return;
    const pool = this.#pool ?? (await ready?.catch(() => undefined));
    this.#pool = undefined;
    await pool?.end().catch(() => {});
  }

  /**
   * Runs one operation: keys checked, the tables ready, and every failure that is not already a
   * `StoreError` turned into one naming the store, the operation and the session.
   */
  async #call<T>(
    operation: string,
    namespace: string | undefined,
    sessionId: string | undefined,
    body: (query: Query) => Promise<T>,
    callId?: string,
  ): Promise<T> {
    if (this.#closed) {
      throw new StoreError({ message: `${this.description} is closed`, store: this.description, operation });
    }
    if (namespace !== undefined) checkStoreKey(this.description, operation, namespace);
    if (sessionId !== undefined) checkStoreKey(this.description, operation, sessionId);
    if (callId !== undefined) checkStoreKey(this.description, operation, callId);
    try {
      const pool = await this.#open();
      const query: Query = async (name, values) => {
        // pg reads a per-query `query_timeout` (its types omit it): a caller's pool gets the bound too.
        const config: QueryConfig & { query_timeout: number } = {
          name: `${this.#names}_${name}`,
          text: this.#statements[name],
          values,
          query_timeout: this.#timeoutMs,
        };
        const result = await pool.query<QueryResultRow>(config);
        return result.rows;
      };
      return await body(query);
    } catch (error) {
      if (error instanceof StoreError || error instanceof ConfigurationError) throw error;
      const subject =
        sessionId !== undefined
          ? ` ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)}`
          : callId !== undefined
            ? ` ${JSON.stringify(callId)} of ${JSON.stringify(namespace)}`
            : namespace !== undefined
              ? ` of ${JSON.stringify(namespace)}`
              : '';
      throw new StoreError({
        message: `${this.description}: ${operation}${subject} failed: ${errorMessage(error)}`,
        store: this.description,
        operation,
        sessionId,
        cause: error,
      });
    }
  }

  /** The pool, with the tables created or upgraded (once). */
  #open(): Promise<Pool> {
    this.#ready ??= this.#connect().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async #connect(): Promise<Pool> {
    let pool = this.#options.pool;
    if (pool === undefined) {
      let pg: typeof import('pg');
      try {
        pg = await import('pg');
      } catch (error) {
        throw missingPeer(['pg'], 'PostgresStore', error);
      }
      const Pool = pg.Pool ?? (pg as unknown as { default: typeof import('pg') }).default.Pool;
      pool = new Pool({
        connectionString: this.#options.connectionString,
        connectionTimeoutMillis: this.#timeoutMs,
        query_timeout: this.#timeoutMs,
        statement_timeout: this.#timeoutMs,
      });
      // An idle connection the server drops (a restart) is discarded; the next call opens a new one.
      pool.on('error', () => {});
      this.#pool = pool;
    }
    await this.#migrate(pool);
    if (this.#closed && this.#options.pool === undefined) await pool.end().catch(() => {});
    return pool;
  }

  /** Creates or upgrades the tables in one transaction, under an advisory lock on their names. */
  async #migrate(pool: Pool): Promise<void> {
    const client = await pool.connect();
    let failed: unknown;
    try {
      await client.query('BEGIN');
      await client.query({
        text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
        values: [`lagent-ts:${this.#tables.sessions}`],
      });
      if (this.#options.schema !== undefined) {
        await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.#options.schema}"`);
      }
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.#tables.meta} (key text PRIMARY KEY, value text NOT NULL)`,
      );
      const { rows } = await client.query<{ value: string }>({
        text: `SELECT value FROM ${this.#tables.meta} WHERE key = 'schema_version'`,
      });
      const current = rows[0] === undefined ? 0 : Number(rows[0].value);
      if (!Number.isSafeInteger(current) || current > POSTGRES_SCHEMA_VERSION) {
        throw new StoreError({
          message: `${this.description}: its tables (${this.#tables.sessions}) are at schema version ${rows[0]?.value}, newer than this version of lagent-ts knows (${POSTGRES_SCHEMA_VERSION}); upgrade lagent-ts to use them`,
          store: this.description,
          operation: 'open',
        });
      }
      const migrations = postgresMigrations(this.#tables);
      for (let version = current; version < POSTGRES_SCHEMA_VERSION; version++) {
        for (const statement of migrations[version]!) await client.query(statement);
      }
      if (current < POSTGRES_SCHEMA_VERSION) {
        await client.query({
          text: `INSERT INTO ${this.#tables.meta} (key, value) VALUES ('schema_version', $1)
            ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
          values: [String(POSTGRES_SCHEMA_VERSION)],
        });
      }
      await client.query('COMMIT');
    } catch (error) {
      failed = error;
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release(failed instanceof StoreError ? undefined : (failed as Error | undefined));
    }
  }

  /**
   * The state of an acquired session. The turns were read in the statement's snapshot: when a commit
   * landed while the statement waited for the row, some are missing, and the session is read again.
   */
  async #fold(query: Query, namespace: string, sessionId: string, row: QueryResultRow): Promise<StoredState> {
    const version = row.version as number;
    if (version === 0) return {};
    const turns = row.turns as string[];
    if (turns.length === version - (row.base_version as number))
      return this.#state(namespace, sessionId, row);
    const [again] = await query('read', [pgKey(namespace), pgKey(sessionId)]);
    if (again === undefined || again.version !== version) {
      throw new Error('the session changed while it was being acquired');
    }
    return this.#state(namespace, sessionId, again);
  }

  /** Folds a session's turns into a new base (the state is unchanged). */
  async #foldNow(query: Query, namespace: string, sessionId: string): Promise<void> {
    const [row] = await query('read', [pgKey(namespace), pgKey(sessionId)]);
    if (row === undefined) return;
    const state = this.#state(namespace, sessionId, row);
    await query('fold', [
      pgKey(namespace),
      pgKey(sessionId),
      JSON.stringify(state),
      row.version,
      row.base_version,
    ]);
  }

  /** The state a row's base and turns make, or a `StoreError` naming the session. */
  #state(namespace: string, sessionId: string, row: QueryResultRow): StoredState {
    try {
      let state = parseState(row.base as string);
      for (const turn of row.turns as string[]) state = applyTurn(state, parseTurn(turn));
      return state;
    } catch (error) {
      throw this.#unreadable('readSession', namespace, sessionId, 'its stored state', error);
    }
  }

  #unreadable(operation: string, namespace: string, sessionId: string, what: string, error: unknown) {
    return new StoreError({
      message: `${this.description}: session ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)} cannot be read: ${what} is not valid (${errorMessage(error)})`,
      store: this.description,
      operation,
      sessionId,
      cause: error,
    });
  }

  /**
   * Why a commit wrote nothing: a `StoreConflictError` saying so, or the session's version when the turn is its
   * last one already (committed by an earlier try whose answer was lost; the lease is released when asked).
   */
  async #conflict(
    query: Query,
    namespace: string,
    sessionId: string,
    options: CommitOptions,
  ): Promise<StoreConflictError | number> {
    const [row] = await query('lease', [pgKey(namespace), pgKey(sessionId)]);
    const now = row === undefined ? 0 : Number(row.now);
    const expired = row !== undefined && row.expires_at !== null && Number(row.expires_at) <= now;
    if (
      row !== undefined &&
      !expired &&
      options.turnId !== undefined &&
      row.last_turn_id === options.turnId
    ) {
      if (options.release !== false && row.lease_owner === options.owner) {
        await query('release', [pgKey(namespace), pgKey(sessionId), options.owner]);
      }
      return row.version as number;
    }
    const leased = row !== undefined && !expired && row.lease_owner === options.owner;
    return commitConflict(
      this.description,
      namespace,
      sessionId,
      options.version,
      leased ? { reason: 'version', actual: row.version } : { reason: expired ? 'expired' : 'lease' },
    );
  }

  /** The `StoreConflictError` of a fenced journal write that wrote nothing. */
  async #fenceRefused(
    query: Query,
    namespace: string,
    sessionId: string,
    operation: string,
  ): Promise<StoreConflictError> {
    const [row] = await query('lease', [pgKey(namespace), pgKey(sessionId)]);
    const expired = row !== undefined && row.expires_at !== null && Number(row.expires_at) <= Number(row.now);
    return fenceConflict(this.description, namespace, sessionId, operation, expired);
  }
}

type Query = (name: PostgresStatementName, values: unknown[]) => Promise<QueryResultRow[]>;

function info(row: QueryResultRow, sessionId: string): SessionInfo {
  return {
    sessionId,
    version: row.version as number,
    updatedAt: Number(row.updated_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
  };
}

/** JSON text of a value, or a `StoreError`-bound message for one JSON cannot hold. */
function json(value: unknown, what: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error(`${what} cannot be stored as JSON`);
  return text;
}

function isMessages(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.values(value).every(Array.isArray)
  );
}

function parseState(text: string): StoredState {
  const state = JSON.parse(text) as unknown;
  if (!isMessages(state)) throw new Error('not an object of message lists');
  return state as StoredState;
}

function parseTurn(text: string): SessionTurn {
  const turn = JSON.parse(text) as SessionTurn;
  if (turn === null || typeof turn !== 'object' || Array.isArray(turn))
    throw new Error('a turn is not an object');
  for (const part of [turn.append, turn.replace]) {
    if (part !== undefined && !isMessages(part)) throw new Error('a turn is not an object of message lists');
  }
  return turn;
}

/** A run as its statements return it. */
function runRecordOf(row: QueryResultRow): RunRecord {
  return {
    runId: fromPgKey(row.run_id as string),
    sessionId: fromPgKey(row.session_id as string),
    status: row.status as RunStatus,
    lastSeq: row.last_seq as number,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    result: (row.result as string | null) ?? undefined,
    cancelRequested: row.cancel_requested as boolean,
    expiresAt: Number(row.expires_at),
  };
}

/** What a write of a run notifies: a digest of its (stored) namespace and id, which fits any notice. */
function runNotice(ns: string, runId: string): string {
  return createHash('sha256').update(`${ns.length}:${ns}${runId}`).digest('base64url');
}

/** The connection string without its password, for messages. */
function safeUrl(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = '***';
    url.search = '';
    return url.toString();
  } catch {
    return 'connectionString';
  }
}

/** Marks a key stored as the hex of its UTF-16 code units (see {@link pgKey}). */
const ESCAPED = '\u0001';

/**
 * A key as stored: itself, unless PostgreSQL text cannot hold it (a NUL character, a lone surrogate) or it
 * starts with {@link ESCAPED}; then ESCAPED and the hex of its UTF-16 code units (one key, and no other).
 */
export function pgKey(key: string): string {
  if (key.charCodeAt(0) !== 1 && !key.includes('\u0000') && !/\p{Surrogate}/u.test(key)) return key;
  let hex = ESCAPED;
  for (let i = 0; i < key.length; i++) hex += key.charCodeAt(i).toString(16).padStart(4, '0');
  return hex;
}

/** A stored key back as the key. */
export function fromPgKey(stored: string): string {
  if (stored.charCodeAt(0) !== 1) return stored;
  let key = '';
  for (let i = 1; i < stored.length; i += 4)
    key += String.fromCharCode(Number.parseInt(stored.slice(i, i + 4), 16));
  return key;
}
