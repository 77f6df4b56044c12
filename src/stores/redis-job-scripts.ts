import type { Redis } from 'ioredis';
import { FENCE_GRACE_MS, PRELUDE, WRITE } from './redis-scripts';

/*
 * The scripts RedisStore runs for a session changed by a BullMQ job (QueueAgentWorker): the same keys and the
 * same writes as RedisStore's own scripts, plus a fence: a change happens only while the job's lock
 * (`<queue prefix>:<jobId>:lock`) holds the worker's token, and once per job (the commit writes the job's
 * reply marker and marks the job's hash in the same script). Also the reading of a session stored in the
 * queue's first layout (`<queue prefix>:lagent:session:<id>` and `:turns:<id>`), rewritten into RedisStore's
 * on first touch.
 */

/** The field of a BullMQ job's hash that says its turn is committed. */
export const COMMITTED_FIELD = 'lagentCommitted';

/** The mark a session moved from the queue's first layout carries (field `migrated`). */
export const QUEUE_LAYOUT_1 = 'queue-1';

// migrate(base, m, old session key, old turns key, a new epoch, namespaces key, hex namespace): moves a
// session of the queue's first layout (a hash: version, state ('' for none), epoch; a list of the turns
// since that state) to RedisStore's, unless RedisStore's already has it. True when it moved one.
const MIGRATE = `
local function migrate(base, m, old, oldTurns, epoch, namespaces, hexns)
  if old == '' or redis.call('EXISTS', old) == 0 then return false end
  local f = redis.call('HMGET', old, 'version', 'state', 'epoch')
  local version = tonumber(f[1] or '0') or 0
  local turns = redis.call('LLEN', oldTurns)
  if version < 1 or turns > version then
    redis.call('DEL', old, oldTurns)
    return false
  end
  local s, t = base .. ':s:' .. m, base .. ':t:' .. m
  redis.call('DEL', s, t)
  if turns > 0 then redis.call('RENAME', oldTurns, t) end
  local state = f[2] or ''
  if state == '' then state = '{}' end
  local kept = f[3] or ''
  if kept == '' then kept = epoch end
  redis.call('HSET', s, 'version', version, 'updated', now, 'expires', '', 'epoch', kept,
    'base', version - turns, 'state', state, 'migrated', '${QUEUE_LAYOUT_1}')
  redis.call('ZADD', base .. ':i', 0, m)
  redis.call('SADD', namespaces, hexns)
  redis.call('DEL', old, oldTurns)
  return true
end
`;

// fence(done, job, lock, token): the reply of a job committed before, that it was committed (reply gone), or
// that the job is no longer the caller's (its BullMQ lock holds another token, or none); nil when it may go on.
const FENCE = `
local function fence(done, job, lock, token)
  local reply = redis.call('GET', done)
  if reply then return {'done', reply} end
  if redis.call('HEXISTS', job, '${COMMITTED_FIELD}') == 1 then return {'committed'} end
  if redis.call('GET', lock) ~= token then return {'stale'} end
  return nil
end
`;

// ARGV: base, session, owner, lease ms, known epoch, known version, done, job, lock, token, cancel key,
// old session key ('' for none), old turns key, a new epoch, namespaces key, hex namespace.
// The fence's answer | {'cancelled'} | {'busy', lease ms left} | {'ok', version, epoch} (the known state) |
// {'ok', version, epoch, then the session's fields and turns}.
const ACQUIRE = `${PRELUDE}${MIGRATE}${FENCE}
local base, m, owner = ARGV[1], ARGV[2], ARGV[3]
local fenced = fence(ARGV[7], ARGV[8], ARGV[9], ARGV[10])
if fenced then return fenced end
if redis.call('EXISTS', ARGV[11]) == 1 then return {'cancelled'} end
local alive = live(base, m) or migrate(base, m, ARGV[12], ARGV[13], ARGV[14], ARGV[15], ARGV[16])
local lease = base .. ':l:' .. m
local holder = redis.call('GET', lease)
if holder and holder ~= owner then return {'busy', tostring(redis.call('PTTL', lease))} end
redis.call('SET', lease, owner, 'PX', ARGV[4])
-- The holder of record too, so that fenced journal writes of an owner before this one are refused.
redis.call('SET', base .. ':f:' .. m, owner, 'PX', tonumber(ARGV[4]) + ${FENCE_GRACE_MS})
if not alive then return {'ok', '0', ''} end
local f = redis.call('HMGET', base .. ':s:' .. m, 'version', 'epoch')
if f[2] == ARGV[5] and f[1] == ARGV[6] then return {'ok', f[1], f[2]} end
return session(base, m, {'ok', f[1], f[2] or ''})
`;

// ARGV: base, session, owner, version, kind ('append' | 'rewrite'), payload, ttl ms ('' for none), a new
// epoch, namespaces key, hex namespace, done, job, lock, token, reply, reply ttl (s).
// Once per job (the fence), and only at the version the state was loaded at, while no other owner holds the
// lease (an expired one is no harm: the version says whether anything was committed meanwhile). The lease
// is released whatever the answer, unless another owner holds it (`lost`).
// The fence's answer | {'lost'} | {'conflict', version} | {'ok', new version, turns since the base, epoch,
// base version}
const COMMIT = `${PRELUDE}${WRITE}${FENCE}
local base, m, owner = ARGV[1], ARGV[2], ARGV[3]
local lease = base .. ':l:' .. m
local holder = redis.call('GET', lease)
local function finish(result)
  if holder == owner then redis.call('DEL', lease) end
  return result
end
local fenced = fence(ARGV[11], ARGV[12], ARGV[13], ARGV[14])
if fenced then return finish(fenced) end
if holder and holder ~= owner then return {'lost'} end
local version = version_of(base, m, live(base, m))
if version ~= tonumber(ARGV[4]) then return finish({'conflict', tostring(version)}) end
local result = write(base, m, version, ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
redis.call('SET', ARGV[11], ARGV[15], 'EX', ARGV[16])
if redis.call('EXISTS', ARGV[12]) == 1 then redis.call('HSET', ARGV[12], '${COMMITTED_FIELD}', '1') end
return finish(result)
`;

// ARGV: base, session, old session key ('' for none), old turns key, a new epoch, namespaces key, hex
// namespace. The session's fields and turns, or nil.
const READ = `${PRELUDE}${MIGRATE}
local base, m = ARGV[1], ARGV[2]
if not (live(base, m) or migrate(base, m, ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])) then return false end
return session(base, m, {})
`;

// ARGV: as READ. Empties a session's state (its version counts on) unless a lease is held on it: 0 then.
const RESET = `${PRELUDE}${MIGRATE}
local base, m = ARGV[1], ARGV[2]
local alive = live(base, m) or migrate(base, m, ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
if redis.call('EXISTS', base .. ':l:' .. m) == 1 then return 0 end
if not alive then return 1 end
local s = base .. ':s:' .. m
local version = tonumber(redis.call('HGET', s, 'version')) + 1
redis.call('DEL', base .. ':t:' .. m)
redis.call('HSET', s, 'version', version, 'base', version, 'state', '{}', 'updated', now)
return 1
`;

/** The job scripts as commands of an ioredis client. */
export interface RedisJobCommands {
  lagentJobAcquire(...args: string[]): Promise<string[]>;
  lagentJobCommit(...args: string[]): Promise<string[]>;
  lagentJobRead(...args: string[]): Promise<string[] | null>;
  lagentJobReset(...args: string[]): Promise<number>;
}

const SCRIPTS: Record<keyof RedisJobCommands, string> = {
  lagentJobAcquire: ACQUIRE,
  lagentJobCommit: COMMIT,
  lagentJobRead: READ,
  lagentJobReset: RESET,
};

/** Defines the job scripts on a client (once per client). */
export function defineJobCommands<T extends Redis>(redis: T): T & RedisJobCommands {
  const commands = redis as T & Partial<RedisJobCommands>;
  if (commands.lagentJobAcquire === undefined) {
    for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 0, lua });
  }
  return redis as T & RedisJobCommands;
}
