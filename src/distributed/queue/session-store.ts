import type { Redis } from 'ioredis';
import type { SessionId } from '../../schema/session';

/**
 * Sessions in Redis, next to the BullMQ queue's own keys (`<prefix>:<queue>:lagent:...`):
 *
 * - `session:<id>`: a hash with `version` (committed turns, and resets) and `state`, the JSON of the agent's
 *   state dict in Python Lagent's shape (`{ "memory": [...], "writer.memory": [...] }`).
 * - `lease:<id>`: who runs a call of the session now (`<jobId>:<attempt token>`), with a time to live that
 *   the holder keeps renewing. One holder at a time gives one call at a time across all workers.
 * - `done:<jobId>`: the reply of a job whose turn is committed. Written in the same script as the turn, so
 *   a job run again (its worker died after committing, before BullMQ marked it completed) returns the same
 *   reply instead of committing a second turn. The caller deletes it once it has the reply (the job is then
 *   completed in BullMQ and never runs again), and reads it when it missed the job's completed event.
 * - `cancel:<jobId>`: set by a caller that stopped waiting; the job does not start when it sees it.
 * - `shape`: the served agent's {@link AgentShape}, for `stateDict` of unknown sessions and in camelCase.
 *
 * Every change to a session is one Lua script, so a turn is in Redis whole or not at all.
 */
export class SessionKeys {
  readonly base: string;

  constructor(prefix: string, queue: string) {
    this.base = `${prefix}:${queue}:lagent`;
  }

  session(sessionId: SessionId): string {
    return `${this.base}:session:${String(sessionId)}`;
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

// KEYS: session, lease, done, cancel.  ARGV: holder, lease ms.
const ACQUIRE = `
local done = redis.call('GET', KEYS[3])
if done then return {'done', done} end
if redis.call('EXISTS', KEYS[4]) == 1 then return {'cancelled'} end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {'busy', tostring(redis.call('PTTL', KEYS[2]))} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local s = redis.call('HMGET', KEYS[1], 'version', 'state')
return {'ok', s[1] or '0', s[2] or ''}
`;

// KEYS: lease.  ARGV: holder, lease ms.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

// KEYS: lease.  ARGV: holder.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// KEYS: session, lease, done.  ARGV: holder, expected version, state JSON, reply JSON, done ttl (s).
// Idempotent (a job already committed gets its stored reply) and fenced: the version must be the one the
// state was loaded at, and no other holder may own the session now.
const COMMIT = `
local holder = redis.call('GET', KEYS[2])
local done = redis.call('GET', KEYS[3])
if done then
  if holder == ARGV[1] then redis.call('DEL', KEYS[2]) end
  return {'done', done}
end
if holder and holder ~= ARGV[1] then return {'lost'} end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version ~= tonumber(ARGV[2]) then
  if holder then redis.call('DEL', KEYS[2]) end
  return {'conflict', tostring(version)}
end
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', ARGV[3])
redis.call('SET', KEYS[3], ARGV[4], 'EX', ARGV[5])
if holder then redis.call('DEL', KEYS[2]) end
return {'ok', tostring(version + 1)}
`;

// KEYS: session, lease.  Forgets a session's memory (keeping its version counting) unless a call runs on it.
const RESET = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', '')
return 1
`;

interface SessionCommands {
  lagentAcquire(
    session: string,
    lease: string,
    done: string,
    cancel: string,
    holder: string,
    ms: number,
  ): Promise<string[]>;
  lagentRenew(lease: string, holder: string, ms: number): Promise<number>;
  lagentRelease(lease: string, holder: string): Promise<number>;
  lagentCommit(
    session: string,
    lease: string,
    done: string,
    holder: string,
    version: number,
    state: string,
    reply: string,
    ttl: number,
  ): Promise<string[]>;
  lagentReset(session: string, lease: string): Promise<number>;
}

/** What taking a session's lease gave. */
export type Acquired =
  | { status: 'ok'; version: number; state: string | undefined }
  | { status: 'done'; reply: string }
  | { status: 'cancelled' }
  | { status: 'busy'; retryInMs: number };

/** What committing a turn gave: committed now, committed before (its reply), or refused (run it again). */
export type Committed =
  | { status: 'ok' }
  | { status: 'done'; reply: string }
  | { status: 'lost' | 'conflict' };

/** The session scripts on one ioredis connection (ioredis sends them by SHA, and the text again after a restart). */
export class SessionStore {
  readonly keys: SessionKeys;
  readonly #redis: Redis & SessionCommands;

  constructor(redis: Redis, keys: SessionKeys) {
    this.keys = keys;
    const commands = redis as Redis & Partial<SessionCommands>;
    if (commands.lagentAcquire === undefined) {
      redis.defineCommand('lagentAcquire', { numberOfKeys: 4, lua: ACQUIRE });
      redis.defineCommand('lagentRenew', { numberOfKeys: 1, lua: RENEW });
      redis.defineCommand('lagentRelease', { numberOfKeys: 1, lua: RELEASE });
      redis.defineCommand('lagentCommit', { numberOfKeys: 3, lua: COMMIT });
      redis.defineCommand('lagentReset', { numberOfKeys: 2, lua: RESET });
    }
    this.#redis = redis as Redis & SessionCommands;
  }

  async acquire(sessionId: SessionId, jobId: string, holder: string, leaseMs: number): Promise<Acquired> {
    const k = this.keys;
    const [status, a, b] = await this.#redis.lagentAcquire(
      k.session(sessionId),
      k.lease(sessionId),
      k.done(jobId),
      k.cancel(jobId),
      holder,
      leaseMs,
    );
    if (status === 'ok') return { status, version: Number(a), state: b === '' ? undefined : b };
    if (status === 'done') return { status, reply: a! };
    if (status === 'busy') return { status, retryInMs: Math.max(0, Number(a)) };
    return { status: 'cancelled' };
  }

  renew(sessionId: SessionId, holder: string, leaseMs: number): Promise<number> {
    return this.#redis.lagentRenew(this.keys.lease(sessionId), holder, leaseMs);
  }

  release(sessionId: SessionId, holder: string): Promise<number> {
    return this.#redis.lagentRelease(this.keys.lease(sessionId), holder);
  }

  async commit(
    sessionId: SessionId,
    jobId: string,
    holder: string,
    version: number,
    state: string,
    reply: string,
  ): Promise<Committed> {
    const k = this.keys;
    const [status, stored] = await this.#redis.lagentCommit(
      k.session(sessionId),
      k.lease(sessionId),
      k.done(jobId),
      holder,
      version,
      state,
      reply,
      DONE_TTL_SECONDS,
    );
    if (status === 'done') return { status, reply: stored! };
    return { status: status as 'ok' | 'lost' | 'conflict' };
  }

  /** Resets a session unless a call holds it; true when reset. */
  async reset(sessionId: SessionId): Promise<boolean> {
    return (await this.#redis.lagentReset(this.keys.session(sessionId), this.keys.lease(sessionId))) === 1;
  }

  /** The stored state dict JSON and version of a session (`state` undefined when it has none). */
  async read(sessionId: SessionId): Promise<{ version: number; state: string | undefined }> {
    const [version, state] = await this.#redis.hmget(this.keys.session(sessionId), 'version', 'state');
    return { version: Number(version ?? 0), state: state ? state : undefined };
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
