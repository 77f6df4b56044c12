import { randomUUID } from 'node:crypto';
import { defineJobCommands, type RedisJobCommands } from './redis-job-scripts';
import { encodeKey } from './redis-keys';
import { REDIS_COMPACT_AFTER, type RedisStore, redisStoreInternals } from './redis-store';
import type { StoredState } from './types';

/*
 * A RedisStore's sessions as BullMQ jobs change them (QueueAgentWorker): the store's keys and turn format,
 * so a session is the same whether an agent with `memory: { store }` or a queue worker wrote it, with every
 * change fenced by the job's BullMQ lock and made once per job. Not part of the SessionStore interface.
 */

/** The BullMQ job a change is made for: its keys, and the lock token the worker holds. */
export interface JobFence {
  /** The job's reply marker: written by the commit, and the answer to any later attempt while it lasts. */
  done: string;
  /** BullMQ's hash of the job: the commit marks it, so the job never commits again while it exists. */
  job: string;
  /** BullMQ's lock of the job: changes happen only while it holds `token`. */
  lock: string;
  token: string;
}

/** Where a session may still be in the queue's first layout (read and moved to the store's on first touch). */
export interface LegacySessionKeys {
  session: string;
  turns: string;
}

/** A session as a job loads it: its state (`{}` for none), and the size of its stored JSON. */
export interface JobSessionState {
  state: StoredState;
  size: number;
}

/**
 * What an attempt at a job found: the session's lease, with its version, epoch (a random id naming the life
 * of the session's record, `''` before its first commit) and its state unless it is the known one; or the
 * job committed before (with its reply, or without when no longer kept), cancelled, no longer this worker's
 * (`stale`), or the session busy.
 */
export type JobAcquired =
  | { status: 'ok'; version: number; epoch: string; loaded: JobSessionState | undefined }
  | { status: 'done'; reply: string }
  | { status: 'committed' | 'cancelled' | 'stale' }
  | { status: 'busy'; retryInMs: number };

/** What a job's commit gave: committed now, before, not this worker's job (`stale`), or refused. */
export type JobCommitted =
  | { status: 'ok'; version: number; epoch: string }
  | { status: 'done'; reply: string }
  | { status: 'committed' | 'stale' | 'lost' | 'conflict' };

/** A turn of a job: its messages appended per memory path, or the whole new state. */
export interface JobChange {
  kind: 'append' | 'rewrite';
  payload: string;
}

/** A RedisStore namespace's sessions, changed by BullMQ jobs. */
export class RedisJobSessions {
  readonly store: RedisStore;
  readonly namespace: string;
  readonly #base: string;
  readonly #hex: string;

  constructor(store: RedisStore, namespace: string) {
    this.store = store;
    this.namespace = namespace;
    this.#base = store.keys.base(namespace);
    this.#hex = encodeKey(namespace);
  }

  /** Takes the session's lease for `owner`, for the job holding `fence`'s lock. */
  acquire(
    sessionId: string,
    options: {
      owner: string;
      leaseMs: number;
      fence: JobFence;
      cancel: string;
      known?: { epoch: string; version: number } | undefined;
      legacy?: LegacySessionKeys | undefined;
    },
  ): Promise<JobAcquired> {
    return this.#run('acquireSession', sessionId, async (redis, m) => {
      const { fence, known, legacy } = options;
      const reply = await redis.lagentJobAcquire(
        this.#base,
        m,
        options.owner,
        String(options.leaseMs),
        known?.epoch ?? '',
        known === undefined ? '' : String(known.version),
        fence.done,
        fence.job,
        fence.lock,
        fence.token,
        options.cancel,
        ...this.#legacy(legacy),
      );
      const [status, a, b] = reply;
      if (status === 'done') return { status, reply: a! };
      if (status === 'busy') return { status, retryInMs: Math.max(0, Number(a)) };
      if (status !== 'ok') return { status: status as 'committed' | 'cancelled' | 'stale' };
      const version = Number(a);
      if (reply.length === 3)
        return { status, version, epoch: b!, loaded: version === 0 ? empty() : undefined };
      const fields = reply.slice(3);
      try {
        return { status, version, epoch: b!, loaded: this.#load(fields, sessionId) };
      } catch (error) {
        await this.store.releaseSession(this.namespace, sessionId, options.owner).catch(() => {});
        throw error;
      }
    });
  }

  /** Extends `owner`'s lease while the job is still the worker's; false when either is lost. */
  renew(sessionId: string, owner: string, leaseMs: number, fence: JobFence): Promise<boolean> {
    return this.#run('renewLease', sessionId, async (redis, m) => {
      return (await redis.lagentStoreRenew(this.#base, m, owner, leaseMs, fence.lock, fence.token)) === 1;
    });
  }

  release(sessionId: string, owner: string): Promise<void> {
    return this.store.releaseSession(this.namespace, sessionId, owner);
  }

  /**
   * Commits a job's turn at `version`, writing its `reply` marker (kept `replyTtlSeconds`) and marking the
   * job's hash in the same script; releases the lease. Folds the turns into a new base as
   * {@link RedisStore.commitTurn} does.
   */
  commit(
    sessionId: string,
    options: {
      owner: string;
      version: number;
      change: JobChange;
      fence: JobFence;
      reply: string;
      replyTtlSeconds: number;
      /** The whole state after the turn, as JSON, made when the turns are folded (saves reading them). */
      state?: (() => string) | undefined;
    },
  ): Promise<JobCommitted> {
    return this.#run('commitTurn', sessionId, async (redis, m) => {
      const { fence } = options;
      const ttl = this.store.ttlMs;
      const reply = await redis.lagentJobCommit(
        this.#base,
        m,
        options.owner,
        String(options.version),
        options.change.kind,
        options.change.payload,
        ttl === undefined ? '' : String(ttl),
        randomUUID(),
        this.store.keys.namespaces,
        this.#hex,
        fence.done,
        fence.job,
        fence.lock,
        fence.token,
        options.reply,
        String(options.replyTtlSeconds),
      );
      const [status, a] = reply;
      if (status === 'done') return { status, reply: a! };
      if (status !== 'ok') return { status: status as 'committed' | 'stale' | 'lost' | 'conflict' };
      if (Number(reply[2]) > REDIS_COMPACT_AFTER) {
        // The turn is committed: folding is upkeep, and a failure leaves the turns to the next commit.
        await this.store[redisStoreInternals]
          .compact(
            redis,
            this.#base,
            m,
            reply[3]!,
            reply[4]!,
            options.state && { version: Number(a), state: options.state },
          )
          .catch(() => {});
      }
      return { status, version: Number(a), epoch: reply[3]! };
    });
  }

  /** The session's version, epoch and state, or undefined when there is none. Takes no lease. */
  read(
    sessionId: string,
    legacy?: LegacySessionKeys,
  ): Promise<({ version: number; epoch: string } & JobSessionState) | undefined> {
    return this.#run('readSession', sessionId, async (redis, m) => {
      const fields = await redis.lagentJobRead(this.#base, m, ...this.#legacy(legacy));
      if (fields === null) return undefined;
      return { version: Number(fields[0]), epoch: fields[3]!, ...this.#load(fields, sessionId) };
    });
  }

  /** Empties the session's state (its version counts on) unless a lease is held on it; true when done. */
  reset(sessionId: string, legacy?: LegacySessionKeys): Promise<boolean> {
    return this.#run('resetSession', sessionId, async (redis, m) => {
      return (await redis.lagentJobReset(this.#base, m, ...this.#legacy(legacy))) === 1;
    });
  }

  #legacy(legacy: LegacySessionKeys | undefined): string[] {
    return [legacy?.session ?? '', legacy?.turns ?? '', randomUUID(), this.store.keys.namespaces, this.#hex];
  }

  #load(fields: readonly string[], sessionId: string): JobSessionState {
    let size = 0;
    for (let i = 5; i < fields.length; i++) size += fields[i]!.length;
    return { state: this.store[redisStoreInternals].fold(fields, this.namespace, sessionId), size };
  }

  #run<T>(
    operation: string,
    sessionId: string,
    body: (
      redis: Parameters<Parameters<RedisStore[typeof redisStoreInternals]['run']>[3]>[0] & RedisJobCommands,
      m: string,
    ) => Promise<T>,
  ): Promise<T> {
    return this.store[redisStoreInternals].run(operation, this.namespace, sessionId, (redis) =>
      body(defineJobCommands(redis), encodeKey(sessionId)),
    );
  }
}

function empty(): JobSessionState {
  return { state: {}, size: 0 };
}
