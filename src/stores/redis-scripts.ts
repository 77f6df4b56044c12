import type { Redis } from 'ioredis';

/*
 * RedisStore's Lua scripts: every change to a session is one of them, so it is in Redis whole or not at all.
 * Keys are built inside the scripts from a namespace's base (`<prefix>:<hex namespace>`) and hex ids (see
 * redis-keys.ts), so they work on a single Redis server (not a Redis Cluster). Time is Redis's clock (TIME),
 * the same for every process sharing the store.
 */

/** The layout's version, in `<prefix>:meta`. */
export const REDIS_SCHEMA = 1;

// Every script: `now` (ms), `drop` (a session and everything of it) and `live` (whether a session has
// committed turns and has not expired; an expired one is dropped, as MemoryStore does).
export const PRELUDE = `
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function drop(base, m)
  local sj = base .. ':sj:' .. m
  for _, call in ipairs(redis.call('LRANGE', sj, 0, -1)) do
    redis.call('DEL', base .. ':j:' .. call, base .. ':j:' .. call .. ':e')
  end
  redis.call('DEL', base .. ':s:' .. m, base .. ':t:' .. m, base .. ':l:' .. m, sj)
  redis.call('ZREM', base .. ':i', m)
  redis.call('ZREM', base .. ':x', m)
end
local function live(base, m)
  local expires = redis.call('HGET', base .. ':s:' .. m, 'expires')
  if expires then
    if expires == '' or tonumber(expires) > now then return true end
    drop(base, m)
    return false
  end
  -- Listed but gone: Redis expired its keys.
  if redis.call('ZSCORE', base .. ':i', m) then drop(base, m) end
  return false
end
local function session(base, m, result)
  local f = redis.call('HMGET', base .. ':s:' .. m, 'version', 'updated', 'expires', 'epoch', 'base', 'state')
  for i = 1, 6 do result[#result + 1] = f[i] or '' end
  for _, turn in ipairs(redis.call('LRANGE', base .. ':t:' .. m, 0, -1)) do result[#result + 1] = turn end
  return result
end
`;

// ARGV: meta key, this code's schema. The stored schema (set when there is none).
const SCHEMA = `
local stored = redis.call('HGET', ARGV[1], 'schema')
if stored then return stored end
redis.call('HSET', ARGV[1], 'schema', ARGV[2])
return ARGV[2]
`;

// ARGV: base, session, owner, lease ms, known version ('' for none).
// {'busy', until} | {'ok', fresh ('1' when the lease was not the owner's already), then the session's fields
// and turns, or only its version when it is the known one}
const ACQUIRE = `${PRELUDE}
local base, m, owner = ARGV[1], ARGV[2], ARGV[3]
local alive = live(base, m)
local lease = base .. ':l:' .. m
local holder = redis.call('GET', lease)
if holder and holder ~= owner then
  return {'busy', tostring(now + math.max(redis.call('PTTL', lease), 0))}
end
redis.call('SET', lease, owner, 'PX', ARGV[4])
local fresh = holder and '0' or '1'
if not alive then return {'ok', fresh, '0'} end
local version = redis.call('HGET', base .. ':s:' .. m, 'version')
if version == ARGV[5] then return {'ok', fresh, version} end
return session(base, m, {'ok', fresh})
`;

// ARGV: base, session, owner, lease ms; and, for a lease held by a BullMQ job (redis-job-sessions.ts), the
// job's lock key and the worker's token: the lease is kept only while the lock holds that token.
const RENEW = `${PRELUDE}
if ARGV[5] and redis.call('GET', ARGV[5]) ~= ARGV[6] then return 0 end
live(ARGV[1], ARGV[2])
local lease = ARGV[1] .. ':l:' .. ARGV[2]
if redis.call('GET', lease) ~= ARGV[3] then return 0 end
redis.call('PEXPIRE', lease, ARGV[4])
return 1
`;

// ARGV: base, session, owner.
const RELEASE = `${PRELUDE}
live(ARGV[1], ARGV[2])
local lease = ARGV[1] .. ':l:' .. ARGV[2]
if redis.call('GET', lease) == ARGV[3] then redis.call('DEL', lease) end
return 1
`;

// A turn written at `version` (checked by the caller): appended to the turns, or (`rewrite`) the whole state as
// a new base. Sets the expiry (ttl ms, '' for none) and lists a new session. Returns
// {'ok', new version, turns since the base, epoch, base version}.
export const WRITE = `
local function write(base, m, version, kind, payload, ttl, epoch, namespaces, hexns)
  local s, t = base .. ':s:' .. m, base .. ':t:' .. m
  if version == 0 then
    redis.call('DEL', t)
    redis.call('HSET', s, 'epoch', epoch, 'base', '0', 'state', '{}')
    redis.call('ZADD', base .. ':i', 0, m)
    redis.call('SADD', namespaces, hexns)
  end
  if kind == 'rewrite' then
    redis.call('DEL', t)
    redis.call('HSET', s, 'state', payload, 'base', version + 1)
  else
    redis.call('RPUSH', t, payload)
  end
  redis.call('HSET', s, 'version', version + 1, 'updated', now)
  if ttl == '' then
    redis.call('HSET', s, 'expires', '')
    redis.call('PERSIST', s)
    redis.call('PERSIST', t)
    redis.call('ZREM', base .. ':x', m)
  else
    local expires = now + tonumber(ttl)
    redis.call('HSET', s, 'expires', expires)
    redis.call('PEXPIREAT', s, expires)
    redis.call('PEXPIREAT', t, expires)
    redis.call('ZADD', base .. ':x', expires, m)
  end
  local f = redis.call('HMGET', s, 'epoch', 'base')
  return {'ok', tostring(version + 1), tostring(redis.call('LLEN', t)), f[1] or '', f[2] or ''}
end
local function version_of(base, m, alive)
  if not alive then return 0 end
  local version = tonumber(redis.call('HGET', base .. ':s:' .. m, 'version'))
  if not version then error('the stored version is not a number') end
  return version
end
`;

// ARGV: base, session, owner, version, turn, release ('1'/'0'), ttl ms ('' for none), a new epoch, the
// namespaces key, the hex namespace.
// {'lease'} | {'version', stored version} | {'ok', new version, turns since the base, epoch, base version}
const COMMIT = `${PRELUDE}${WRITE}
local base, m, owner = ARGV[1], ARGV[2], ARGV[3]
local alive = live(base, m)
local lease = base .. ':l:' .. m
if redis.call('GET', lease) ~= owner then return {'lease'} end
local version = version_of(base, m, alive)
if version ~= tonumber(ARGV[4]) then return {'version', tostring(version)} end
local result = write(base, m, version, 'append', ARGV[5], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
if ARGV[6] == '1' then redis.call('DEL', lease) end
return result
`;

// ARGV: base, session. The session's fields and turns, or nil.
const READ = `${PRELUDE}
if not live(ARGV[1], ARGV[2]) then return false end
return session(ARGV[1], ARGV[2], {})
`;

// ARGV: base, session. 1 when it had committed turns.
const DELETE = `${PRELUDE}
local existed = live(ARGV[1], ARGV[2])
drop(ARGV[1], ARGV[2])
return existed and 1 or 0
`;

// ARGV: base, start (ZRANGEBYLEX form), how many. Up to that many live sessions from start, in key order:
// session, version, updated, expires for each.
const LIST = `${PRELUDE}
local base, start, want = ARGV[1], ARGV[2], tonumber(ARGV[3])
local result, found = {}, 0
local batch = math.max(want, 64)
while found < want do
  local members = redis.call('ZRANGEBYLEX', base .. ':i', start, '+', 'LIMIT', 0, batch)
  for _, m in ipairs(members) do
    local f = redis.call('HMGET', base .. ':s:' .. m, 'version', 'updated', 'expires')
    if f[1] and (f[3] == '' or (tonumber(f[3]) or math.huge) > now) then
      result[#result + 1] = m
      result[#result + 1] = f[1]
      result[#result + 1] = f[2] or ''
      result[#result + 1] = f[3]
      found = found + 1
      if found == want then break end
    end
  end
  if #members < batch then break end
  start = '(' .. members[#members]
end
return result
`;

// ARGV: base, batch size. Drops up to that many expired sessions: {purged, looked at}.
const PURGE = `${PRELUDE}
local base = ARGV[1]
local members = redis.call('ZRANGEBYSCORE', base .. ':x', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local purged = 0
for _, m in ipairs(members) do
  if live(base, m) then
    local expires = redis.call('HGET', base .. ':s:' .. m, 'expires')
    if expires == '' then redis.call('ZREM', base .. ':x', m) else redis.call('ZADD', base .. ':x', expires, m) end
  else
    drop(base, m)
    purged = purged + 1
  end
end
return {purged, #members}
`;

// ARGV: base, session, epoch, base version read, version read, its whole state. Folds the turns up to that
// version into the base, unless the session changed meanwhile (deleted, written again, or folded already).
const COMPACT = `
local base, m = ARGV[1], ARGV[2]
local s = base .. ':s:' .. m
local f = redis.call('HMGET', s, 'epoch', 'base', 'version')
if f[1] ~= ARGV[3] or f[2] ~= ARGV[4] or tonumber(f[3]) < tonumber(ARGV[5]) then return 0 end
redis.call('HSET', s, 'state', ARGV[6], 'base', ARGV[5])
redis.call('LTRIM', base .. ':t:' .. m, tonumber(ARGV[5]) - tonumber(ARGV[4]), -1)
return 1
`;

// ARGV: base, session, call, entry. The entry's seq.
const JOURNAL_APPEND = `
local base, m, call = ARGV[1], ARGV[2], ARGV[3]
local journal = base .. ':j:' .. call
if redis.call('EXISTS', journal) == 0 then
  redis.call('HSET', journal, 'session', m, 'finished', '0')
  redis.call('RPUSH', base .. ':sj:' .. m, call)
end
return redis.call('RPUSH', journal .. ':e', ARGV[4]) - 1
`;

// ARGV: base, call. {session, finished, entries...} or nil.
const JOURNAL_READ = `
local journal = ARGV[1] .. ':j:' .. ARGV[2]
local f = redis.call('HMGET', journal, 'session', 'finished')
if not f[1] then return false end
local result = {f[1], f[2] or '0'}
for _, entry in ipairs(redis.call('LRANGE', journal .. ':e', 0, -1)) do result[#result + 1] = entry end
return result
`;

// ARGV: base, call.
const JOURNAL_FINISH = `
local journal = ARGV[1] .. ':j:' .. ARGV[2]
if redis.call('EXISTS', journal) == 1 then redis.call('HSET', journal, 'finished', '1') end
return 1
`;

// ARGV: base, session, unfinished only ('1'/'0').
const JOURNAL_LIST = `
local result = {}
for _, call in ipairs(redis.call('LRANGE', ARGV[1] .. ':sj:' .. ARGV[2], 0, -1)) do
  if ARGV[3] ~= '1' or redis.call('HGET', ARGV[1] .. ':j:' .. call, 'finished') ~= '1' then
    result[#result + 1] = call
  end
end
return result
`;

// ARGV: base, call. 1 when it existed.
const JOURNAL_DELETE = `
local journal = ARGV[1] .. ':j:' .. ARGV[2]
local m = redis.call('HGET', journal, 'session')
if not m then return 0 end
redis.call('DEL', journal, journal .. ':e')
redis.call('LREM', ARGV[1] .. ':sj:' .. m, 0, ARGV[2])
return 1
`;

type Reply = Promise<(string | null)[] | null>;

/** The scripts as commands of an ioredis client (sent by SHA; ioredis sends the text when Redis lacks it). */
export interface RedisStoreCommands {
  lagentStoreSchema(meta: string, schema: number): Promise<string>;
  lagentStoreAcquire(base: string, m: string, owner: string, ms: number, known: string): Promise<string[]>;
  lagentStoreRenew(
    base: string,
    m: string,
    owner: string,
    ms: number,
    ...fence: [] | [lock: string, token: string]
  ): Promise<number>;
  lagentStoreRelease(base: string, m: string, owner: string): Promise<number>;
  lagentStoreCommit(
    base: string,
    m: string,
    owner: string,
    version: number,
    turn: string,
    release: string,
    ttl: string,
    epoch: string,
    namespaces: string,
    hexNamespace: string,
  ): Promise<string[]>;
  lagentStoreRead(base: string, m: string): Reply;
  lagentStoreDelete(base: string, m: string): Promise<number>;
  lagentStoreList(base: string, start: string, limit: number): Promise<string[]>;
  lagentStorePurge(base: string, batch: number): Promise<[number, number]>;
  lagentStoreCompact(
    base: string,
    m: string,
    epoch: string,
    fromBase: string,
    version: string,
    state: string,
  ): Promise<number>;
  lagentStoreJournalAppend(base: string, m: string, call: string, entry: string): Promise<number>;
  lagentStoreJournalRead(base: string, call: string): Reply;
  lagentStoreJournalFinish(base: string, call: string): Promise<number>;
  lagentStoreJournalList(base: string, m: string, unfinished: string): Promise<string[]>;
  lagentStoreJournalDelete(base: string, call: string): Promise<number>;
}

const SCRIPTS: Record<keyof RedisStoreCommands, string> = {
  lagentStoreSchema: SCHEMA,
  lagentStoreAcquire: ACQUIRE,
  lagentStoreRenew: RENEW,
  lagentStoreRelease: RELEASE,
  lagentStoreCommit: COMMIT,
  lagentStoreRead: READ,
  lagentStoreDelete: DELETE,
  lagentStoreList: LIST,
  lagentStorePurge: PURGE,
  lagentStoreCompact: COMPACT,
  lagentStoreJournalAppend: JOURNAL_APPEND,
  lagentStoreJournalRead: JOURNAL_READ,
  lagentStoreJournalFinish: JOURNAL_FINISH,
  lagentStoreJournalList: JOURNAL_LIST,
  lagentStoreJournalDelete: JOURNAL_DELETE,
};

/** Defines the scripts on a client (once per client: stores sharing one share them). */
export function defineStoreCommands(redis: Redis): Redis & RedisStoreCommands {
  const commands = redis as Redis & Partial<RedisStoreCommands>;
  if (commands.lagentStoreSchema === undefined) {
    for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 0, lua });
  }
  return redis as Redis & RedisStoreCommands;
}
