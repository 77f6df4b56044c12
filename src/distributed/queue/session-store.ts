import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { SessionId } from '../../schema/session';
import type { StateChange, StoredState } from './session-state';

/**
 * Sessions in Redis, next to the BullMQ queue's own keys (`<prefix>:<queue>:lagent:...`):
 *
 * - `session:<id>`: a hash with `version` (committed turns, and resets), `state`, the base of the
 *   session's state: the JSON of a whole state dict in Python Lagent's shape
 *   (`{ "memory": [...], "writer.memory": [...] }`) or `''` for none, and `epoch`, a random id set by the
 *   first commit, so that a version names one state even if the record is deleted and starts again.
 * - `turns:<id>`: a list of the turns committed since the base was written, each the JSON of the messages
 *   it appended per key. A turn that only appends (the usual case) writes its own messages, not the whole
 *   history; one that changes earlier messages writes a new base and empties the list. A session written
 *   before turns were appended has a base and no list, and reads the same.
 * - `lease:<id>`: who runs a call of the session now (`<jobId>:<attempt token>`), with a time to live that
 *   the holder keeps renewing. One holder at a time gives one call at a time across all workers.
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
 * Every change to a session is one Lua script, so a turn is in Redis whole or not at all.
 */
export class SessionKeys {
  readonly base: string;
  readonly #queue: string;

  constructor(prefix: string, queue: string) {
    this.#queue = `${prefix}:${queue}`;
    this.base = `${this.#queue}:lagent`;
  }

  session(sessionId: SessionId): string {
    return `${this.base}:session:${String(sessionId)}`;
  }
  turns(sessionId: SessionId): string {
    return `${this.base}:turns:${String(sessionId)}`;
  }
  lease(sessionId: SessionId): string {
    return `${this.base}:lease:${String(sessionId)}`;
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

/** How long a commit marker is kept when no caller collects it (s). */
export const DONE_TTL_SECONDS = 24 * 3600;
/** How long a cancel marker is kept (s): longer than any job waits in a queue that is being served. */
export const CANCEL_TTL_SECONDS = 24 * 3600;
/** The field of a BullMQ job's hash that says its turn is committed. */
const COMMITTED_FIELD = 'lagentCommitted';

// The checks every attempt of a job makes, in this order: a committed job answers with its reply (or, when
// that is gone, says it was committed); a job whose lock is not this worker's is not this worker's to run.
// KEYS[done], KEYS[job], KEYS[jobLock], ARGV[token] are given by position to each script.
const FENCE = (done: number, job: number, lock: number, token: number) => `
local done = redis.call('GET', KEYS[${done}])
if done then return {'done', done} end
if redis.call('HEXISTS', KEYS[${job}], '${COMMITTED_FIELD}') == 1 then return {'committed'} end
if redis.call('GET', KEYS[${lock}]) ~= ARGV[${token}] then return {'stale'} end
`;

// KEYS: session, lease, done, cancel, job, jobLock.  ARGV: holder, lease ms, token.
const ACQUIRE = `
${FENCE(3, 5, 6, 3)}
if redis.call('EXISTS', KEYS[4]) == 1 then return {'cancelled'} end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {'busy', tostring(redis.call('PTTL', KEYS[2]))} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local s = redis.call('HMGET', KEYS[1], 'version', 'epoch')
return {'ok', s[1] or '0', s[2] or ''}
`;

// KEYS: lease, jobLock.  ARGV: holder, lease ms, token.  Keeps the lease only while the job is still this
// worker's.
const RENEW = `
if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 0 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

// KEYS: lease.  ARGV: holder.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// KEYS: session, lease, done, turns, job, jobLock.
// ARGV: holder, expected version, change ('append' | 'rewrite' | 'none'), payload, reply JSON, done ttl (s),
// token, a new epoch (kept only when the session has none yet).
// Once per job (see FENCE), and fenced: the version must be the one the state was loaded at, and no other
// holder may own the session now.
const COMMIT = `
local holder = redis.call('GET', KEYS[2])
local function finish(result)
  if holder == ARGV[1] then redis.call('DEL', KEYS[2]) end
  return result
end
local fenced = (function()
${FENCE(3, 5, 6, 7)}
end)()
if fenced then return finish(fenced) end
if holder and holder ~= ARGV[1] then return {'lost'} end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version ~= tonumber(ARGV[2]) then return finish({'conflict', tostring(version)}) end
if ARGV[3] == 'append' then
  redis.call('RPUSH', KEYS[4], ARGV[4])
elseif ARGV[3] == 'rewrite' then
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[1], 'state', ARGV[4])
end
redis.call('HSET', KEYS[1], 'version', version + 1)
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[8])
redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[6])
if redis.call('EXISTS', KEYS[5]) == 1 then redis.call('HSET', KEYS[5], '${COMMITTED_FIELD}', '1') end
return finish({'ok', tostring(version + 1), redis.call('HGET', KEYS[1], 'epoch')})
`;

// KEYS: session, lease, turns.  Forgets a session's memory (keeping its version counting) unless a call
// runs on it.
const RESET = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', '')
redis.call('DEL', KEYS[3])
return 1
`;

interface SessionCommands {
  lagentAcquire(
    session: string,
    lease: string,
    done: string,
    cancel: string,
    job: string,
    jobLock: string,
    holder: string,
    ms: number,
    token: string,
  ): Promise<string[]>;
  lagentRenew(lease: string, jobLock: string, holder: string, ms: number, token: string): Promise<number>;
  lagentRelease(lease: string, holder: string): Promise<number>;
  lagentCommit(
    session: string,
    lease: string,
    done: string,
    turns: string,
    job: string,
    jobLock: string,
    holder: string,
    version: number,
    change: StateChange['kind'],
    payload: string,
    reply: string,
    ttl: number,
    token: string,
    epoch: string,
  ): Promise<string[]>;
  lagentReset(session: string, lease: string, turns: string): Promise<number>;
}

/**
 * What an attempt at a job found before running it: the session's lease (and its version), or the job
 * already committed (with its reply, or without when the reply is no longer kept), cancelled, no longer this
 * worker's (`stale`: its BullMQ lock expired, another worker may run it), or the session busy.
 */
export type Acquired =
  | { status: 'ok'; version: number; epoch: string }
  | { status: 'done'; reply: string }
  | { status: 'committed' | 'cancelled' | 'stale' }
  | { status: 'busy'; retryInMs: number };

/**
 * What committing a turn gave: committed now, committed before (its reply, or none kept), not this worker's
 * job any more (`stale`), or refused (`lost`, `conflict`: run it again).
 */
export type Committed =
  | { status: 'ok'; version: number; epoch: string }
  | { status: 'done'; reply: string }
  | { status: 'committed' | 'stale' | 'lost' | 'conflict' };

/** The session scripts on one ioredis connection (ioredis sends them by SHA, and the text again after a restart). */
export class SessionStore {
  readonly keys: SessionKeys;
  readonly #redis: Redis & SessionCommands;

  constructor(redis: Redis, keys: SessionKeys) {
    this.keys = keys;
    const commands = redis as Redis & Partial<SessionCommands>;
    if (commands.lagentAcquire === undefined) {
      redis.defineCommand('lagentAcquire', { numberOfKeys: 6, lua: ACQUIRE });
      redis.defineCommand('lagentRenew', { numberOfKeys: 2, lua: RENEW });
      redis.defineCommand('lagentRelease', { numberOfKeys: 1, lua: RELEASE });
      redis.defineCommand('lagentCommit', { numberOfKeys: 6, lua: COMMIT });
      redis.defineCommand('lagentReset', { numberOfKeys: 3, lua: RESET });
    }
    this.#redis = redis as Redis & SessionCommands;
  }

  /** Takes the session's lease for an attempt at a job that holds the BullMQ lock `token`. */
  async acquire(
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    leaseMs: number,
  ): Promise<Acquired> {
    const k = this.keys;
    const [status, a, b] = await this.#redis.lagentAcquire(
      k.session(sessionId),
      k.lease(sessionId),
      k.done(jobId),
      k.cancel(jobId),
      k.job(jobId),
      k.jobLock(jobId),
      holder,
      leaseMs,
      token,
    );
    if (status === 'ok') return { status, version: Number(a), epoch: b! };
    if (status === 'done') return { status, reply: a! };
    if (status === 'busy') return { status, retryInMs: Math.max(0, Number(a)) };
    return { status: status as 'committed' | 'cancelled' | 'stale' };
  }

  /** Extends the lease while the holder still has it and the job is still this worker's: 0 when lost. */
  renew(
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    leaseMs: number,
  ): Promise<number> {
    return this.#redis.lagentRenew(
      this.keys.lease(sessionId),
      this.keys.jobLock(jobId),
      holder,
      leaseMs,
      token,
    );
  }

  release(sessionId: SessionId, holder: string): Promise<number> {
    return this.#redis.lagentRelease(this.keys.lease(sessionId), holder);
  }

  async commit(
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    version: number,
    change: StateChange,
    reply: string,
  ): Promise<Committed> {
    const k = this.keys;
    const [status, stored, epoch] = await this.#redis.lagentCommit(
      k.session(sessionId),
      k.lease(sessionId),
      k.done(jobId),
      k.turns(sessionId),
      k.job(jobId),
      k.jobLock(jobId),
      holder,
      version,
      change.kind,
      change.payload,
      reply,
      DONE_TTL_SECONDS,
      token,
      randomUUID(),
    );
    if (status === 'ok') return { status, version: Number(stored), epoch: epoch! };
    if (status === 'done') return { status, reply: stored! };
    return { status: status as 'committed' | 'stale' | 'lost' | 'conflict' };
  }

  /** Resets a session unless a call holds it; true when reset. */
  async reset(sessionId: SessionId): Promise<boolean> {
    const k = this.keys;
    return (
      (await this.#redis.lagentReset(k.session(sessionId), k.lease(sessionId), k.turns(sessionId))) === 1
    );
  }

  /** The session's stored state and version, read at one instant (a transaction, no script copies it). */
  async read(sessionId: SessionId): Promise<StoredState> {
    const results = await this.#redis
      .multi()
      .hmget(this.keys.session(sessionId), 'version', 'state', 'epoch')
      .lrange(this.keys.turns(sessionId), 0, -1)
      .exec();
    if (results === null) throw new Error('the transaction reading the session was aborted');
    for (const [error] of results) if (error) throw error;
    const [version, base, epoch] = results[0]![1] as (string | null)[];
    return {
      version: Number(version ?? 0),
      epoch: epoch ?? '',
      base: base ?? '',
      turns: results[1]![1] as string[],
    };
  }

  /** Marks a job as no longer wanted and tells the workers, so one running it can stop. */
  async cancel(jobId: string): Promise<void> {
    await this.#redis
      .multi()
      .set(this.keys.cancel(jobId), '1', 'EX', CANCEL_TTL_SECONDS)
      .publish(this.keys.cancelChannel, jobId)
      .exec();
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
