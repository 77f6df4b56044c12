import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ConfigurationError, missingPeer, StoreError } from '../schema/errors';
import { errorMessage } from '../utils/text';
import { checkLimit, checkStoreKey, checkTtl, otherSession } from './memory-store';
import { encodeTurn, foldState } from './redis-codec';
import { decodeKey, encodeKey, RedisStoreKeys } from './redis-keys';
import { defineStoreCommands, REDIS_SCHEMA, type RedisStoreCommands } from './redis-scripts';
import { checkRunRange, checkRunStatus, checkRunTtl, checkRunWrite, RunWatchers } from './run-log';
import type {
  AcquiredSession,
  AcquireOptions,
  BusySession,
  CommitOptions,
  CreatedRun,
  CreateRunOptions,
  FinishJournalOptions,
  JournalFence,
  ListOptions,
  RunEvent,
  RunEventPage,
  RunListOptions,
  RunLogStore,
  RunPage,
  RunRecord,
  RunStatus,
  RunWrite,
  RunWritten,
  SessionPage,
  SessionStore,
  StoredJournal,
  StoredSession,
  StoredState,
  StoreOptions,
  UnfinishedCallPage,
} from './types';
import { checkRetain, commitConflict, fenceConflict, RUN_PAGE } from './types';

/** Options of {@link RedisStore}: where Redis is (`url`, or a `client` the caller owns), and the store's. */
export interface RedisStoreOptions extends StoreOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...`; the store opens and closes its client. */
  url?: string | undefined;
  /**
   * An ioredis client the caller owns (and closes): its own settings (retries, offline queue, timeouts)
   * decide how long calls wait while Redis is away.
   */
  client?: Redis | undefined;
  /** The start of every key, so several apps share one Redis. @default 'lagent' */
  prefix?: string | undefined;
  /** How long a call waits for Redis (connecting, or a command's reply), in ms. @default 5000 */
  timeoutMs?: number | undefined;
}

/**
 * The way into a RedisStore's client for code of lagent-ts that runs its own scripts on the store's keys
 * (QueueAgentWorker's sessions, see redis-job-sessions.ts); not exported from the package.
 */
export const redisStoreInternals = Symbol('RedisStore internals');

/** What {@link redisStoreInternals} gives. */
export interface RedisStoreInternals {
  /** Runs `body` on the client, its failures as the store's other methods report them. */
  run<T>(
    operation: string,
    namespace: string,
    sessionId: string,
    body: (redis: Redis & RedisStoreCommands) => Promise<T>,
  ): Promise<T>;
  /**
   * Folds a session's turns into a new base (upkeep after a commit left more than REDIS_COMPACT_AFTER):
   * read from Redis, or `known`, the state the caller holds at that version (its JSON made on demand).
   */
  compact(
    redis: Redis & RedisStoreCommands,
    base: string,
    m: string,
    epoch: string,
    fromBase: string,
    known?: { version: number; state: () => string },
  ): Promise<void>;
  /** Folds a session's stored fields (version, updated, expires, epoch, base, state, turns...). */
  fold(fields: readonly string[], namespace: string, sessionId: string): StoredState;
}

/** Turns since the base after which a commit folds them into a new base. */
export const REDIS_COMPACT_AFTER = 32;
/** Expired sessions purged per script run. */
const PURGE_BATCH = 500;

let loaded: Promise<typeof import('ioredis').default> | undefined;

/** Loads ioredis on first use; a missing package is a ConfigurationError saying what to install. */
function loadIoredis(): Promise<typeof import('ioredis').default> {
  loaded ??= import('ioredis').then((module) => module.Redis ?? module.default);
  return loaded.catch((error: unknown) => {
    loaded = undefined;
    throw missingPeer(['ioredis'], 'RedisStore', error);
  });
}

/**
 * Sessions and call journals in Redis (ioredis, loaded on first use), shared by every process that opens
 * the same Redis and prefix. Each change is one Lua script that checks the lease and the version and
 * writes the whole turn or nothing; a turn writes only its own messages (the session keeps a base state and
 * the turns since, folded into a new base every 32 turns). Sessions with a `ttlMs`
 * expire through Redis's key expiry as well as the expiry time the scripts check; `purgeExpired` also
 * clears them from the listing index. Asynchronous: every method returns a promise. Needs one Redis server
 * (not a Redis Cluster).
 *
 * A stopped server fails calls within about `timeoutMs` with a {@link StoreError}, and the store works again
 * once Redis is back.
 *
 * @example
 * const store = new RedisStore({ url: 'redis://127.0.0.1:6379', ttlMs: 7 * 24 * 3600_000 });
 * const agent = new AsyncAgent({ llm, memory: { store } });
 */
export class RedisStore implements SessionStore, RunLogStore {
  readonly synchronous = false as const;
  readonly description: string;
  readonly ttlMs: number | undefined;
  readonly keys: RedisStoreKeys;
  readonly #url: string | undefined;
  readonly #timeoutMs: number;
  readonly #owned: boolean;
  #client: Promise<Redis & RedisStoreCommands> | undefined;
  #checked: Promise<void> | undefined;
  #lastError: Error | undefined;
  #closed = false;
  /** Run writes are published: watchers hear every process's. */
  readonly watchesOtherProcesses = true;
  readonly #runWatchers = new RunWatchers();
  /** The connection that hears run writes (made by the first `watchRun`). */
  #subscriber: Promise<Redis | undefined> | undefined;

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigurationError({ message: 'RedisStore takes { url } or { client }' });
    }
    this.ttlMs = checkTtl(options.ttlMs);
    const prefix = options.prefix ?? 'lagent';
    if (typeof prefix !== 'string' || prefix.length === 0) {
      throw new ConfigurationError({ message: 'RedisStore: prefix must be a non-empty string' });
    }
    this.keys = new RedisStoreKeys(prefix);
    const timeoutMs = options.timeoutMs ?? 5_000;
    if (!(Number.isSafeInteger(timeoutMs) && timeoutMs > 0)) {
      throw new ConfigurationError({
        message: `RedisStore: timeoutMs must be a positive integer, got ${timeoutMs}`,
      });
    }
    this.#timeoutMs = timeoutMs;
    if ((options.url === undefined) === (options.client === undefined)) {
      throw new ConfigurationError({ message: 'RedisStore takes either url or client (one of them)' });
    }
    if (options.client !== undefined) {
      const client = options.client;
      this.#owned = false;
      this.#client = Promise.resolve(defineStoreCommands(client));
      const { host, port, path } = client.options ?? {};
      this.description = `RedisStore(${path ?? `${host ?? '127.0.0.1'}:${port ?? 6379}`})`;
    } else {
      this.#owned = true;
      this.#url = options.url;
      this.description = `RedisStore(${redact(options.url!)})`;
    }
  }

  acquireSession(
    namespace: string,
    sessionId: string,
    options: AcquireOptions,
  ): Promise<AcquiredSession | BusySession> {
    return this.#run('acquireSession', namespace, sessionId, async (redis) => {
      const base = this.keys.base(namespace);
      const m = encodeKey(sessionId);
      const known = options.knownVersion === undefined ? '' : String(options.knownVersion);
      const reply = await redis.lagentStoreAcquire(base, m, options.owner, options.leaseMs, known);
      if (reply[0] === 'busy') return { acquired: false, until: Number(reply[1]) };
      const version = Number(reply[2]);
      if (reply.length === 3) {
        return { acquired: true, version, state: options.knownVersion === version ? undefined : {} };
      }
      try {
        return { acquired: true, version, state: this.#fold(reply.slice(2), namespace, sessionId) };
      } catch (error) {
        // A lease taken for a session that cannot be read is given back.
        if (reply[1] === '1') await redis.lagentStoreRelease(base, m, options.owner).catch(() => {});
        throw error;
      }
    });
  }

  renewLease(namespace: string, sessionId: string, owner: string, leaseMs: number): Promise<boolean> {
    return this.#run('renewLease', namespace, sessionId, async (redis) => {
      const renewed = await redis.lagentStoreRenew(
        this.keys.base(namespace),
        encodeKey(sessionId),
        owner,
        leaseMs,
      );
      return renewed === 1;
    });
  }

  releaseSession(namespace: string, sessionId: string, owner: string): Promise<void> {
    return this.#run('releaseSession', namespace, sessionId, async (redis) => {
      await redis.lagentStoreRelease(this.keys.base(namespace), encodeKey(sessionId), owner);
    });
  }

  commitTurn(namespace: string, sessionId: string, options: CommitOptions): Promise<number> {
    return this.#run('commitTurn', namespace, sessionId, async (redis) => {
      const turn = encodeTurn(options.turn);
      const base = this.keys.base(namespace);
      const m = encodeKey(sessionId);
      const reply = await redis.lagentStoreCommit(
        base,
        m,
        options.owner,
        options.version,
        turn,
        options.release === false ? '0' : '1',
        this.ttlMs === undefined ? '' : String(this.ttlMs),
        randomUUID(),
        this.keys.namespaces,
        encodeKey(namespace),
        options.turnId ?? '',
      );
      if (reply[0] === 'lease' || reply[0] === 'expired') {
        throw commitConflict(this.description, namespace, sessionId, options.version, {
          reason: reply[0],
        });
      }
      if (reply[0] === 'version') {
        throw commitConflict(this.description, namespace, sessionId, options.version, {
          reason: 'version',
          actual: reply[1] as string,
        });
      }
      const version = Number(reply[1]);
      if (Number(reply[2]) > REDIS_COMPACT_AFTER) {
        // The turn is committed: folding is upkeep, and a failure leaves the turns to the next commit.
        await this.#compact(redis, base, m, reply[3]!, reply[4]!).catch(() => {});
      }
      return version;
    });
  }

  readSession(namespace: string, sessionId: string): Promise<StoredSession | undefined> {
    return this.#run('readSession', namespace, sessionId, async (redis) => {
      const reply = await redis.lagentStoreRead(this.keys.base(namespace), encodeKey(sessionId));
      if (reply === null) return undefined;
      const fields = reply as string[];
      return {
        sessionId,
        version: Number(fields[0]),
        updatedAt: Number(fields[1]),
        expiresAt: fields[2] === '' ? null : Number(fields[2]),
        state: this.#fold(fields, namespace, sessionId),
      };
    });
  }

  listSessions(namespace: string, options: ListOptions = {}): Promise<SessionPage> {
    return this.#run('listSessions', namespace, undefined, async (redis) => {
      const limit = checkLimit(options.limit);
      if (options.after !== undefined) checkStoreKey(this.description, 'listSessions', options.after);
      const start = options.after === undefined ? '-' : `(${encodeKey(options.after)}`;
      const reply = await redis.lagentStoreList(this.keys.base(namespace), start, limit + 1);
      const sessions: SessionPage['sessions'] = [];
      for (let i = 0; i < reply.length; i += 4) {
        sessions.push({
          sessionId: decodeKey(reply[i]!),
          version: Number(reply[i + 1]),
          updatedAt: Number(reply[i + 2]),
          expiresAt: reply[i + 3] === '' ? null : Number(reply[i + 3]),
        });
      }
      if (sessions.length <= limit) return { sessions };
      sessions.length = limit;
      return { sessions, next: sessions.at(-1)!.sessionId };
    });
  }

  deleteSession(namespace: string, sessionId: string): Promise<boolean> {
    return this.#run('deleteSession', namespace, sessionId, async (redis) => {
      return (await redis.lagentStoreDelete(this.keys.base(namespace), encodeKey(sessionId))) === 1;
    });
  }

  purgeExpired(namespace?: string): Promise<number> {
    return this.#run('purgeExpired', namespace, undefined, async (redis) => {
      const bases =
        namespace === undefined
          ? (await redis.smembers(this.keys.namespaces)).map((hex) => this.keys.baseOfHex(hex))
          : [this.keys.base(namespace)];
      let purged = 0;
      for (const base of bases) {
        for (;;) {
          const [count, seen] = await redis.lagentStorePurge(base, PURGE_BATCH);
          purged += count;
          if (seen < PURGE_BATCH) break;
        }
        while ((await redis.lagentStoreJournalPrune(base, PURGE_BATCH)) === PURGE_BATCH);
        while ((await redis.lagentStoreRunPrune(base, PURGE_BATCH)) === PURGE_BATCH);
      }
      return purged;
    });
  }

  appendJournal(
    namespace: string,
    sessionId: string,
    callId: string,
    data: unknown,
    fence?: JournalFence,
  ): Promise<number> {
    return this.#run('appendJournal', namespace, sessionId, async (redis) => {
      checkStoreKey(this.description, 'appendJournal', callId);
      const entry = JSON.stringify(data);
      if (entry === undefined) throw new Error(`a journal entry must be JSON, got ${typeof data}`);
      const base = this.keys.base(namespace);
      const [status, seq] = await redis.lagentStoreJournalAppend(
        base,
        encodeKey(sessionId),
        encodeKey(callId),
        entry,
        fence?.owner ?? '',
        fence === undefined ? '' : String(fence.leaseMs),
      );
      if (status === 'ok') return Number(seq);
      if (status === 'other') throw otherSession(this.description, 'appendJournal', namespace, callId);
      throw fenceConflict(this.description, namespace, sessionId, 'appendJournal', status === 'expired');
    });
  }

  readJournal(namespace: string, callId: string): Promise<StoredJournal | undefined> {
    return this.#runJournal('readJournal', namespace, callId, async (redis) => {
      const reply = await redis.lagentStoreJournalRead(this.keys.base(namespace), encodeKey(callId));
      if (reply === null) return undefined;
      const [session, finished, ...entries] = reply as string[];
      return {
        callId,
        sessionId: decodeKey(session!),
        entries: entries.map((entry, seq) => {
          try {
            return { seq, data: JSON.parse(entry) as unknown };
          } catch (error) {
            throw new StoreError({
              message: `${this.description}: entry ${seq} of call ${quote(callId)} of ${quote(namespace)} is not JSON (${errorMessage(error)})`,
              store: this.description,
              operation: 'readJournal',
              sessionId: decodeKey(session!),
            });
          }
        }),
        finished: finished === '1',
      };
    });
  }

  finishJournal(namespace: string, callId: string, options: FinishJournalOptions = {}): Promise<void> {
    return this.#runJournal('finishJournal', namespace, callId, async (redis) => {
      const retainMs = checkRetain(this.description, options.retainMs);
      const { entry, fence } = options;
      const json = entry === undefined ? '' : JSON.stringify(entry);
      if (json === undefined) throw new Error(`a journal entry must be JSON, got ${typeof entry}`);
      const [status, session] = await redis.lagentStoreJournalFinish(
        this.keys.base(namespace),
        encodeKey(callId),
        entry === undefined ? '0' : '1',
        json,
        retainMs === undefined ? '' : String(retainMs),
        fence?.owner ?? '',
        fence === undefined ? '' : String(fence.leaseMs),
      );
      if (status !== 'ok') {
        const sessionId = session === undefined ? '' : decodeKey(session);
        throw fenceConflict(this.description, namespace, sessionId, 'finishJournal', status === 'expired');
      }
    });
  }

  listJournals(
    namespace: string,
    sessionId: string,
    options: { unfinished?: boolean | undefined } = {},
  ): Promise<string[]> {
    return this.#run('listJournals', namespace, sessionId, async (redis) => {
      const base = this.keys.base(namespace);
      const calls = await redis.lagentStoreJournalList(
        base,
        encodeKey(sessionId),
        options.unfinished ? '1' : '0',
      );
      return calls.map(decodeKey);
    });
  }

  deleteJournal(namespace: string, callId: string): Promise<boolean> {
    return this.#runJournal('deleteJournal', namespace, callId, async (redis) => {
      return (await redis.lagentStoreJournalDelete(this.keys.base(namespace), encodeKey(callId))) === 1;
    });
  }

  listUnfinishedCalls(namespace: string, options: ListOptions = {}): Promise<UnfinishedCallPage> {
    return this.#run('listUnfinishedCalls', namespace, undefined, async (redis) => {
      const limit = checkLimit(options.limit);
      if (options.after !== undefined) checkStoreKey(this.description, 'listUnfinishedCalls', options.after);
      const start = options.after === undefined ? '-' : `(${encodeKey(options.after)}`;
      const reply = await redis.lagentStoreJournalUnfinished(this.keys.base(namespace), start, limit + 1);
      const calls: UnfinishedCallPage['calls'] = [];
      for (let i = 0; i < reply.length; i += 2) {
        calls.push({ callId: decodeKey(reply[i]!), sessionId: decodeKey(reply[i + 1]!) });
      }
      if (calls.length <= limit) return { calls };
      calls.length = limit;
      return { calls, next: calls.at(-1)!.callId };
    });
  }

  createRun(namespace: string, runId: string, options: CreateRunOptions): Promise<CreatedRun> {
    return this.#run('createRun', namespace, options?.sessionId, async (redis) => {
      checkStoreKey(this.description, 'createRun', runId);
      const status = checkRunStatus(this.description, 'createRun', options.status ?? 'queued');
      const ttlMs = checkRunTtl(this.description, 'createRun', options.ttlMs);
      const reply = await redis.lagentStoreRunCreate(
        this.keys.base(namespace),
        encodeKey(runId),
        encodeKey(options.sessionId),
        status,
        ttlMs,
        this.#runChannel,
        encodeKey(namespace),
      );
      this.#runWatchers.notify(namespace, runId);
      return { created: reply[0] === '1', run: runRecordOf(runId, reply, 1) };
    });
  }

  appendRuns(writes: readonly RunWrite[]): Promise<RunWritten[]> {
    return this.#run('appendRuns', writes[0]?.namespace, undefined, async (redis) => {
      for (const write of writes) checkRunWrite(this.description, write);
      const written = await Promise.all(
        writes.map((write) => {
          const events = write.events.map((event) => `${event.type.length}:${event.type}${event.data}`);
          return redis.lagentStoreRunAppend(
            this.keys.base(write.namespace),
            encodeKey(write.runId),
            write.ttlMs,
            write.status === undefined ? '0' : '1',
            write.status ?? '',
            write.result ?? '',
            this.#runChannel,
            encodeKey(write.namespace),
            ...events,
          );
        }),
      );
      for (const write of writes) this.#runWatchers.notify(write.namespace, write.runId);
      return written.map(([last, cancel]) => ({ lastSeq: Number(last), cancelRequested: cancel === '1' }));
    });
  }

  readRun(namespace: string, runId: string): Promise<RunRecord | undefined> {
    return this.#runJournal('readRun', namespace, runId, async (redis) => {
      const reply = await redis.lagentStoreRunRead(this.keys.base(namespace), encodeKey(runId), 0, 0);
      return reply === null ? undefined : runRecordOf(runId, reply as string[], 0);
    });
  }

  readRunEvents(
    namespace: string,
    runId: string,
    after: number,
    limit?: number,
  ): Promise<RunEventPage | undefined> {
    return this.#runJournal('readRunEvents', namespace, runId, async (redis) => {
      const most = checkRunRange(this.description, after, limit ?? RUN_PAGE);
      const reply = await redis.lagentStoreRunRead(this.keys.base(namespace), encodeKey(runId), after, most);
      if (reply === null) return undefined;
      const fields = reply as string[];
      const events: RunEvent[] = [];
      for (let i = 8; i < fields.length; i++) events.push(decodeRunEvent(after + i - 7, fields[i]!));
      return { run: runRecordOf(runId, fields, 0), events };
    });
  }

  listRuns(namespace: string, sessionId: string, options: RunListOptions = {}): Promise<RunPage> {
    return this.#run('listRuns', namespace, sessionId, async (redis) => {
      const limit = checkLimit(options.limit);
      if (options.after !== undefined) checkStoreKey(this.description, 'listRuns', options.after);
      const reply = await redis.lagentStoreRunList(
        this.keys.base(namespace),
        encodeKey(sessionId),
        options.after === undefined ? '' : encodeKey(options.after),
        limit + 1,
        options.newestFirst ? '1' : '0',
      );
      const runs: RunRecord[] = [];
      for (let i = 0; i < reply.length; i += 9) runs.push(runRecordOf(decodeKey(reply[i]!), reply, i + 1));
      if (runs.length <= limit) return { runs };
      runs.length = limit;
      return { runs, next: runs.at(-1)!.runId };
    });
  }

  cancelRun(namespace: string, runId: string): Promise<RunRecord | undefined> {
    return this.#runJournal('cancelRun', namespace, runId, async (redis) => {
      const reply = await redis.lagentStoreRunCancel(
        this.keys.base(namespace),
        encodeKey(runId),
        this.#runChannel,
        encodeKey(namespace),
      );
      this.#runWatchers.notify(namespace, runId);
      return reply === null ? undefined : runRecordOf(runId, reply as string[], 0);
    });
  }

  deleteRun(namespace: string, runId: string): Promise<boolean> {
    return this.#runJournal('deleteRun', namespace, runId, async (redis) => {
      const existed = await redis.lagentStoreRunDelete(
        this.keys.base(namespace),
        encodeKey(runId),
        this.#runChannel,
        encodeKey(namespace),
      );
      this.#runWatchers.notify(namespace, runId);
      return existed === 1;
    });
  }

  /**
   * Watches a run: told of this process's writes at once, of other processes' when Redis publishes them (a
   * connection of its own subscribes on the first watch; while it cannot, readers fall back to polling).
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
    this.#subscriber ??= this.#subscribe();
    return this.#runWatchers.watch(namespace, runId, listener);
  }

  /** The channel run writes are published on. */
  get #runChannel(): string {
    return `${this.keys.prefix}:runs`;
  }

  async #subscribe(): Promise<Redis | undefined> {
    try {
      const redis = await this.#redis();
      const subscriber = redis.duplicate();
      subscriber.on('error', () => {});
      subscriber.on('message', (_channel: string, message: string) => {
        const at = message.indexOf(':');
        if (at < 0) return;
        this.#runWatchers.notify(decodeKey(message.slice(0, at)), decodeKey(message.slice(at + 1)));
      });
      await subscriber.subscribe(this.#runChannel);
      if (this.#closed) subscriber.disconnect();
      // What changed before this was not heard: every watcher reads again.
      this.#runWatchers.notifyAll();
      return subscriber;
    } catch {
      // Not heard: readers poll. The next watch tries again.
      this.#subscriber = undefined;
      return undefined;
    }
  }

  /** @internal */
  get [redisStoreInternals](): RedisStoreInternals {
    return {
      run: (operation, namespace, sessionId, body) => this.#run(operation, namespace, sessionId, body),
      compact: (redis, base, m, epoch, fromBase, known) =>
        this.#compact(redis, base, m, epoch, fromBase, known),
      fold: (fields, namespace, sessionId) => this.#fold(fields, namespace, sessionId),
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#runWatchers.clear();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    (await subscriber?.catch(() => undefined))?.disconnect();
    const client = this.#client;
    this.#client = undefined;
    if (!this.#owned || client === undefined) return;
    const redis = await client.catch(() => undefined);
    if (redis === undefined) return;
    if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
    else redis.disconnect();
  }

  /** The client, connected lazily, with the schema checked once. */
  async #redis(): Promise<Redis & RedisStoreCommands> {
    this.#client ??= this.#connect();
    const redis = await this.#client;
    this.#checked ??= this.#checkSchema(redis).catch((error: unknown) => {
      this.#checked = undefined;
      throw error;
    });
    await this.#checked;
    return redis;
  }

  async #connect(): Promise<Redis & RedisStoreCommands> {
    let Redis: typeof import('ioredis').default;
    try {
      Redis = await loadIoredis();
    } catch (error) {
      this.#client = undefined;
      throw error;
    }
    const redis = new Redis(this.#url!, {
      lazyConnect: true,
      connectTimeout: this.#timeoutMs,
      commandTimeout: this.#timeoutMs,
      // A command waits through at most one failed reconnection, then fails; once Redis is back the client
      // reconnects on its own. A command cut by a dropped connection is not sent again (it may have run).
      maxRetriesPerRequest: 1,
      retryStrategy: (times: number) => Math.min(times * 100, 1_000),
      autoResendUnfulfilledCommands: false,
    });
    redis.on('error', (error: Error) => {
      this.#lastError = error;
    });
    return defineStoreCommands(redis);
  }

  async #checkSchema(redis: Redis & RedisStoreCommands): Promise<void> {
    const stored = Number(await redis.lagentStoreSchema(this.keys.meta, REDIS_SCHEMA));
    if (!(stored <= REDIS_SCHEMA)) {
      throw new StoreError({
        message: `${this.description}: the data under prefix ${quote(this.keys.prefix)} was written by a newer version of lagent-ts (schema ${stored}; this one reads up to ${REDIS_SCHEMA}); upgrade lagent-ts to use it`,
        store: this.description,
        operation: 'open',
      });
    }
  }

  /** Folds a session's stored fields (version, updated, expires, epoch, base, state, turns...). */
  #fold(fields: readonly string[], namespace: string, sessionId: string): StoredState {
    try {
      return foldState(fields[5]!, fields.slice(6));
    } catch (error) {
      throw new StoreError({
        message: `${this.description}: session ${quote(sessionId)} of ${quote(namespace)} cannot be read: ${errorMessage(error)}`,
        store: this.description,
        operation: 'readSession',
        sessionId,
        cause: error,
      });
    }
  }

  /** Folds the turns since the base into a new base, unless the session moved on meanwhile. */
  async #compact(
    redis: Redis & RedisStoreCommands,
    base: string,
    m: string,
    epoch: string,
    fromBase: string,
    known?: { version: number; state: () => string },
  ): Promise<void> {
    if (known !== undefined) {
      await redis.lagentStoreCompact(base, m, epoch, fromBase, String(known.version), known.state());
      return;
    }
    const fields = (await redis.lagentStoreRead(base, m)) as string[] | null;
    if (fields === null || fields[3] !== epoch || fields[4] !== fromBase) return;
    const state = JSON.stringify(foldState(fields[5]!, fields.slice(6)));
    await redis.lagentStoreCompact(base, m, epoch, fromBase, fields[0]!, state);
  }

  #run<T>(
    operation: string,
    namespace: string | undefined,
    sessionId: string | undefined,
    body: (redis: Redis & RedisStoreCommands) => Promise<T>,
  ): Promise<T> {
    const subject =
      namespace === undefined
        ? ''
        : sessionId === undefined
          ? ` of ${quote(namespace)}`
          : ` ${quote(sessionId)} of ${quote(namespace)}`;
    return this.#call(operation, subject, sessionId, [namespace, sessionId], body);
  }

  #runJournal<T>(
    operation: string,
    namespace: string,
    callId: string,
    body: (redis: Redis & RedisStoreCommands) => Promise<T>,
  ): Promise<T> {
    return this.#call(
      operation,
      ` call ${quote(callId)} of ${quote(namespace)}`,
      undefined,
      [namespace, callId],
      body,
    );
  }

  async #call<T>(
    operation: string,
    subject: string,
    sessionId: string | undefined,
    keys: (string | undefined)[],
    body: (redis: Redis & RedisStoreCommands) => Promise<T>,
  ): Promise<T> {
    if (this.#closed) {
      throw new StoreError({ message: `${this.description} is closed`, store: this.description, operation });
    }
    for (const key of keys) if (key !== undefined) checkStoreKey(this.description, operation, key);
    try {
      return await body(await this.#redis());
    } catch (error) {
      if (error instanceof StoreError || error instanceof ConfigurationError) throw error;
      throw new StoreError({
        message: `${this.description}: ${operation}${subject} failed: ${this.#reason(error)}`,
        store: this.description,
        operation,
        sessionId,
        cause: error,
      });
    }
  }

  /** Why a command failed: for "no more retries", the connection error behind it. */
  #reason(error: unknown): string {
    const message = errorMessage(error);
    if ((error as Error)?.name === 'MaxRetriesPerRequestError' && this.#lastError) {
      return `${this.#lastError.message} (${message})`;
    }
    return message;
  }
}

/** A run as stored: its 8 fields from `at` (session, status, last, created, updated, result, cancel, expires). */
function runRecordOf(runId: string, fields: readonly string[], at: number): RunRecord {
  return {
    runId,
    sessionId: decodeKey(fields[at]!),
    status: fields[at + 1] as RunStatus,
    lastSeq: Number(fields[at + 2]),
    createdAt: Number(fields[at + 3]),
    updatedAt: Number(fields[at + 4]),
    result: fields[at + 5] === '' ? undefined : fields[at + 5],
    cancelRequested: fields[at + 6] === '1',
    expiresAt: Number(fields[at + 7]),
  };
}

/** An event as stored: `<length of its type>:<type><data>`. */
function decodeRunEvent(seq: number, stored: string): RunEvent {
  const colon = stored.indexOf(':');
  const end = colon + 1 + Number(stored.slice(0, colon));
  return { seq, type: stored.slice(colon + 1, end), data: stored.slice(end) };
}

/** A key in a message: JSON-quoted, long ones cut. */
function quote(key: string): string {
  return JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key);
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigurationError({ message: `RedisStore: url is not a URL: ${JSON.stringify(url)}` });
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new ConfigurationError({
      message: `RedisStore: expected a redis:// or rediss:// url, got ${parsed.protocol}`,
    });
  }
  if (parsed.password) parsed.password = '***';
  return parsed.toString().replace(/\/$/, '');
}
