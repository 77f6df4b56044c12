import type { Redis } from 'ioredis';
import { ConfigurationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import {
  type JobAcquired,
  type JobChange,
  type JobCommitted,
  type JobFence,
  type JobSessionState,
  type LegacySessionKeys,
  RedisJobSessions,
} from '../../stores/redis-job-sessions';
import { RedisStore } from '../../stores/redis-store';
import { RUN_CANCEL_PREFIX } from './protocol';

/**
 * The queue's sessions are RedisStore's (`<store prefix>:<hex namespace>:s:<hex session>` and the rest, see
 * stores/redis-keys.ts): the namespace is the queue's name unless set, the prefix RedisStore's `lagent`, so
 * `new RedisStore({ url })` reads and continues them under that namespace, and the queue those an agent with
 * `memory: { store }` wrote. Next to BullMQ's own keys (`<prefix>:<queue>:lagent:...`) the queue keeps only
 * what belongs to its jobs:
 *
 * - `done:<jobId>`: the reply of a job whose turn is committed, written in the same script as the turn, so
 *   a job run again (its worker died after committing, before BullMQ marked it completed) returns the same
 *   reply instead of committing a second turn. The caller deletes it once BullMQ completed the job (it then
 *   never runs again), and reads it when it missed the job's completed event.
 * - `cancel:<jobId>`: set by a caller that stopped waiting; the job does not start when it sees it.
 * - `shape`: the served agent's {@link AgentShape}, for `stateDict` of unknown sessions and in camelCase.
 *
 * A turn is committed once per job, whatever the pauses: the commit script runs only for the worker that
 * holds the job's BullMQ lock now (`<prefix>:<queue>:<jobId>:lock` holds its token), so a worker that
 * stalled past its lock can never commit, nor start the job's agent again; and it marks the job's own hash
 * (`lagentCommitted`), which lives exactly as long as the job, so a later run of the job never commits
 * again even after its reply marker is gone.
 *
 * Sessions of the queue's first layout (`session:<id>`, a hash of version, state and epoch, and `turns:<id>`
 * under `<prefix>:<queue>:lagent`) are moved into the store's on first touch (a call, `stateDict`, `reset`).
 */
export class QueueKeys {
  readonly base: string;
  readonly #queue: string;

  constructor(prefix: string, queue: string) {
    this.#queue = `${prefix}:${queue}`;
    this.base = `${this.#queue}:lagent`;
  }

  done(jobId: string): string {
    return `${this.base}:done:${jobId}`;
  }
  cancel(jobId: string): string {
    return `${this.base}:cancel:${jobId}`;
  }
  /** BullMQ's hash of a job. */
  job(jobId: string): string {
    return `${this.#queue}:${jobId}`;
  }
  /** BullMQ's lock of a job: the token of the worker running it, while its lock lasts. */
  jobLock(jobId: string): string {
    return `${this.#queue}:${jobId}:lock`;
  }
  /** Where the queue's first layout kept a session. */
  legacy(sessionId: SessionId): LegacySessionKeys {
    return {
      session: `${this.base}:session:${String(sessionId)}`,
      turns: `${this.base}:turns:${String(sessionId)}`,
    };
  }
  get shape(): string {
    return `${this.base}:shape`;
  }
  /** The pub/sub channel on which callers ask workers to stop a job they run. */
  get cancelChannel(): string {
    return `${this.base}:cancel`;
  }
}

/**
 * What a worker records of the agent it serves: the state dict of an empty session (Python Lagent's shape),
 * and each of its keys paired with lagent-ts's name for it (`select_agent.memory` / `selectAgent.memory`).
 */
export interface AgentShape {
  state: Record<string, []>;
  keys: [lagent: string, lagentTs: string][];
}

/**
 * Where a queue's sessions are kept: a RedisStore prefix and namespace. Workers and callers of one queue
 * must agree on them; an agent with `memory: { store: new RedisStore({ url, prefix }), namespace }` shares
 * the sessions.
 */
export interface QueueSessionPlace {
  /** RedisStore's key prefix. @default 'lagent' (RedisStore's) */
  storePrefix?: string | undefined;
  /** The RedisStore namespace of the queue's sessions. @default the queue's name */
  namespace?: string | undefined;
}

/** {@link QueueSessionPlace} with its defaults. */
export interface SessionPlace {
  storePrefix: string;
  namespace: string;
}

/** Where the sessions of a worker's or client's queue are kept in RedisStore, checked. */
export function sessionPlace(options: QueueSessionPlace, queue: string): SessionPlace {
  const { storePrefix = 'lagent', namespace = queue } = options;
  for (const [key, value] of [
    ['storePrefix', storePrefix],
    ['namespace', namespace],
  ] as const) {
    if (typeof value !== 'string' || value === '' || value.length > 1024) {
      throw new ConfigurationError({
        message: `${key} must be a string of 1 to 1024 characters, got ${JSON.stringify(value)}`,
      });
    }
  }
  return { storePrefix, namespace };
}

/** How long a commit marker is kept when no caller collects it (s). */
export const DONE_TTL_SECONDS = 24 * 3600;
/** How long a cancel marker is kept (s): longer than any job waits in a queue that is being served. */
export const CANCEL_TTL_SECONDS = 24 * 3600;

export type Acquired = JobAcquired;
export type Committed = JobCommitted;

/** The queue's sessions (a RedisStore namespace, on the queue's connection) and its job markers. */
export class QueueSessions {
  readonly keys: QueueKeys;
  readonly sessions: RedisJobSessions;
  /** The RedisStore on the queue's connection: its sessions, and the logs of its runs. */
  readonly store: RedisStore;
  readonly #redis: Redis;

  constructor(redis: Redis, keys: QueueKeys, place: SessionPlace) {
    this.keys = keys;
    this.#redis = redis;
    this.store = new RedisStore({ client: redis, prefix: place.storePrefix });
    this.sessions = new RedisJobSessions(this.store, place.namespace);
  }

  /** The fence of an attempt at a job holding the BullMQ lock `token`. */
  fence(jobId: string, token: string): JobFence {
    const k = this.keys;
    return { done: k.done(jobId), job: k.job(jobId), lock: k.jobLock(jobId), token };
  }

  /**
   * Takes the session's lease for an attempt at a job that holds the BullMQ lock `token`; the session's
   * state comes with it unless it is `known`.
   */
  acquire(
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    leaseMs: number,
    known: { epoch: string; version: number } | undefined,
  ): Promise<Acquired> {
    return this.sessions.acquire(String(sessionId), {
      owner: holder,
      leaseMs,
      fence: this.fence(jobId, token),
      cancel: this.keys.cancel(jobId),
      known,
      legacy: this.keys.legacy(sessionId),
    });
  }

  /** Extends the lease while the holder still has it and the job is still this worker's: false when lost. */
  renew(
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    leaseMs: number,
  ): Promise<boolean> {
    return this.sessions.renew(String(sessionId), holder, leaseMs, this.fence(jobId, token));
  }

  release(sessionId: SessionId, holder: string): Promise<void> {
    return this.sessions.release(String(sessionId), holder);
  }

  commit(
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    version: number,
    change: JobChange,
    reply: string,
    state?: () => string,
  ): Promise<Committed> {
    return this.sessions.commit(String(sessionId), {
      owner: holder,
      version,
      change,
      fence: this.fence(jobId, token),
      reply,
      replyTtlSeconds: DONE_TTL_SECONDS,
      state,
    });
  }

  /** Empties a session unless a call holds it; true when done. */
  reset(sessionId: SessionId): Promise<boolean> {
    return this.sessions.reset(String(sessionId), this.keys.legacy(sessionId));
  }

  /** The session's version and state, or undefined when it has none. */
  read(sessionId: SessionId): Promise<({ version: number; epoch: string } & JobSessionState) | undefined> {
    return this.sessions.read(String(sessionId), this.keys.legacy(sessionId));
  }

  /** Marks a job as no longer wanted and tells the workers, so one running it can stop. */
  async cancel(jobId: string): Promise<void> {
    await this.#redis
      .multi()
      .set(this.keys.cancel(jobId), '1', 'EX', CANCEL_TTL_SECONDS)
      .publish(this.keys.cancelChannel, jobId)
      .exec();
  }

  /** Tells the workers to stop a run, whichever of its jobs one runs. */
  async cancelRun(runId: string): Promise<void> {
    await this.#redis.publish(this.keys.cancelChannel, `${RUN_CANCEL_PREFIX}${runId}`);
  }

  /** A committed job's reply, if its marker is still there. */
  committedReply(jobId: string): Promise<string | null> {
    return this.#redis.get(this.keys.done(jobId));
  }

  /** Drops a finished job's commit marker (BullMQ completed it: it will not run again). */
  forgetDone(jobId: string): Promise<number> {
    return this.#redis.del(this.keys.done(jobId));
  }
}
