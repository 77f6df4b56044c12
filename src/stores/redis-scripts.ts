import type { Redis } from 'ioredis';
import { PRUNE_BATCH } from './types';

/*
 * RedisStore's Lua scripts: every change to a session is one of them, so it is in Redis whole or not at all.
 * Keys are built inside the scripts from a namespace's base (`<prefix>:<hex namespace>`) and hex ids (see
 * redis-keys.ts), so they work on a single Redis server (not a Redis Cluster). Time is Redis's clock (TIME),
 * the same for every process sharing the store.
 */

/** The layout's version, in `<prefix>:meta`. */
export const REDIS_SCHEMA = 1;

/** How long past its lease a lease's holder of record (`f:`) is kept, in ms: a day. */
export const FENCE_GRACE_MS = 86_400_000;

// Every script: `now` (ms), `drop` (a session and everything of it), `expired` (whether a session's committed
// state expired: it is dropped) and `live` (whether a session has committed turns and has not expired; an
// expired one is dropped, as MemoryStore does). And `fenced`: nil when `owner` still holds the session's
// lease (the holder of record `f:` is theirs, and no other owner's lease `l:` runs), else why not, as
// {'lease'} or {'expired'}; when it holds, the lease is extended by `ms`.
export const PRELUDE = `
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function drop(base, m)
  local sj = base .. ':sj:' .. m
  for _, call in ipairs(redis.call('LRANGE', sj, 0, -1)) do
    redis.call('DEL', base .. ':j:' .. call, base .. ':j:' .. call .. ':e')
    redis.call('ZREM', base .. ':u', call)
    redis.call('ZREM', base .. ':jx', call)
  end
  redis.call('DEL', base .. ':s:' .. m, base .. ':t:' .. m, base .. ':l:' .. m, base .. ':f:' .. m, sj)
  redis.call('ZREM', base .. ':i', m)
  redis.call('ZREM', base .. ':x', m)
end
local function expired(base, m)
  local expires = redis.call('HGET', base .. ':s:' .. m, 'expires')
  if expires then
    if expires == '' or tonumber(expires) > now then return false end
    drop(base, m)
    return true
  end
  -- Listed but gone: Redis expired its keys.
  if redis.call('ZSCORE', base .. ':i', m) then
    drop(base, m)
    return true
  end
  return false
end
local function live(base, m)
  if expired(base, m) then return false end
  return redis.call('EXISTS', base .. ':s:' .. m) == 1
end
local function fenced(base, m, owner, ms)
  if expired(base, m) then return {'expired'} end
  local f, l = base .. ':f:' .. m, base .. ':l:' .. m
  if redis.call('GET', f) ~= owner then return {'lease'} end
  local holder = redis.call('GET', l)
  if holder and holder ~= owner then return {'lease'} end
  redis.call('SET', l, owner, 'PX', ms)
  redis.call('PEXPIRE', f, tonumber(ms) + ${FENCE_GRACE_MS})
  return nil
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
// and turns, or only its version when it is the known one}. The lease `l:` lives as long as it runs; the
// holder of record `f:` (what fenced writes check) stays until another owner takes the lease or it is
// released, so a holder whose lease ran out with nobody taking it goes on.
const ACQUIRE = `${PRELUDE}
local base, m, owner = ARGV[1], ARGV[2], ARGV[3]
local alive = live(base, m)
local lease = base .. ':l:' .. m
local holder = redis.call('GET', lease)
if holder and holder ~= owner then
  return {'busy', tostring(now + math.max(redis.call('PTTL', lease), 0))}
end
redis.call('SET', lease, owner, 'PX', ARGV[4])
redis.call('SET', base .. ':f:' .. m, owner, 'PX', tonumber(ARGV[4]) + ${FENCE_GRACE_MS})
local fresh = holder and '0' or '1'
if not alive then return {'ok', fresh, '0'} end
local version = redis.call('HGET', base .. ':s:' .. m, 'version')
if version == ARGV[5] then return {'ok', fresh, version} end
return session(base, m, {'ok', fresh})
`;

// ARGV: base, session, owner, lease ms; and, for a lease held by a BullMQ job (redis-job-sessions.ts), the
// job's lock key and the worker's token: the lease is kept only while the lock holds that token.
// A lease that ran out with nobody taking it is renewed.
const RENEW = `${PRELUDE}
if ARGV[5] and redis.call('GET', ARGV[5]) ~= ARGV[6] then return 0 end
if fenced(ARGV[1], ARGV[2], ARGV[3], ARGV[4]) then return 0 end
return 1
`;

// ARGV: base, session, owner.
const RELEASE = `${PRELUDE}
live(ARGV[1], ARGV[2])
local lease, f = ARGV[1] .. ':l:' .. ARGV[2], ARGV[1] .. ':f:' .. ARGV[2]
if redis.call('GET', lease) == ARGV[3] then redis.call('DEL', lease) end
if redis.call('GET', f) == ARGV[3] then redis.call('DEL', f) end
return 1
`;

// A turn written at `version` (checked by the caller): appended to the turns, or (`rewrite`) the whole state as
// a new base. Sets the expiry (ttl ms, '' for none), the turn's id (`turn`, '' for none) and lists a new
// session. Returns {'ok', new version, turns since the base, epoch, base version}.
export const WRITE = `
local function write(base, m, version, kind, payload, ttl, epoch, namespaces, hexns, turn)
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
  redis.call('HSET', s, 'version', version + 1, 'updated', now, 'turn', turn or '')
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
// namespaces key, the hex namespace, the turn's id ('' for none).
// {'lease'} | {'expired'} | {'version', stored version} | {'ok', new version, turns since the base, epoch,
// base version}. A turn id that is the session's last turn's: {'ok', its version, '0'} (committed already).
const COMMIT = `${PRELUDE}${WRITE}
local base, m, owner = ARGV[1], ARGV[2], ARGV[3]
local s, lease, f = base .. ':s:' .. m, base .. ':l:' .. m, base .. ':f:' .. m
local function release()
  if ARGV[6] ~= '1' then return end
  if redis.call('GET', lease) == owner then redis.call('DEL', lease) end
  if redis.call('GET', f) == owner then redis.call('DEL', f) end
end
if expired(base, m) then return {'expired'} end
local alive = redis.call('EXISTS', s) == 1
if alive and ARGV[11] ~= '' and redis.call('HGET', s, 'turn') == ARGV[11] then
  release()
  return {'ok', redis.call('HGET', s, 'version'), '0'}
end
local holder = redis.call('GET', lease)
if redis.call('GET', f) ~= owner or (holder and holder ~= owner) then return {'lease'} end
local version = version_of(base, m, alive)
if version ~= tonumber(ARGV[4]) then return {'version', tostring(version)} end
local result = write(base, m, version, 'append', ARGV[5], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11])
release()
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

// A journal's hash: `session`, `finished` ('0'/'1'), `expires` (when a finished journal's retention ends, epoch
// ms; none: kept). `u` lists the namespace's unfinished calls (lexically, score 0), `jx` the finished journals
// with a retention (scored by when it ends). `journal_gone` drops a journal past its retention (true then),
// `drop_journal` any journal, `prune` up to `most` of the namespace's journals past their retention.
const JOURNALS = `
local function drop_journal(base, call, m)
  local journal = base .. ':j:' .. call
  redis.call('DEL', journal, journal .. ':e')
  redis.call('LREM', base .. ':sj:' .. m, 0, call)
  redis.call('ZREM', base .. ':u', call)
  redis.call('ZREM', base .. ':jx', call)
end
local function journal_gone(base, call, m)
  local expires = redis.call('HGET', base .. ':j:' .. call, 'expires')
  if expires and tonumber(expires) <= now then
    drop_journal(base, call, m)
    return true
  end
  return false
end
local function prune(base, most)
  local calls = redis.call('ZRANGEBYSCORE', base .. ':jx', '-inf', now, 'LIMIT', 0, most)
  for _, call in ipairs(calls) do
    local m = redis.call('HGET', base .. ':j:' .. call, 'session')
    if m then drop_journal(base, call, m) else redis.call('ZREM', base .. ':jx', call) end
  end
  return #calls
end
`;

// ARGV: base, session, call, entry, and for a fenced write the owner and lease ms ('' for none).
// {'ok', the entry's seq} | {'other'} (the call is another session's) | {'lease'} | {'expired'}
const JOURNAL_APPEND = `${PRELUDE}${JOURNALS}
local base, m, call = ARGV[1], ARGV[2], ARGV[3]
local journal = base .. ':j:' .. call
local session = redis.call('HGET', journal, 'session')
if session and session ~= m then return {'other'} end
if ARGV[5] ~= '' then
  local refused = fenced(base, m, ARGV[5], ARGV[6])
  if refused then return refused end
end
if session and journal_gone(base, call, m) then session = nil end
if not session then
  prune(base, ${PRUNE_BATCH})
  redis.call('HSET', journal, 'session', m, 'finished', '0')
  redis.call('RPUSH', base .. ':sj:' .. m, call)
  redis.call('ZADD', base .. ':u', 0, call)
elseif redis.call('HGET', journal, 'finished') == '1' then
  -- An entry after the finish reopens the journal (a failed call tried again).
  redis.call('HSET', journal, 'finished', '0')
  redis.call('HDEL', journal, 'expires')
  redis.call('ZREM', base .. ':jx', call)
  redis.call('ZADD', base .. ':u', 0, call)
end
return {'ok', tostring(redis.call('RPUSH', journal .. ':e', ARGV[4]) - 1)}
`;

// ARGV: base, call. {session, finished, entries...} or nil.
const JOURNAL_READ = `${PRELUDE}${JOURNALS}
local journal = ARGV[1] .. ':j:' .. ARGV[2]
local f = redis.call('HMGET', journal, 'session', 'finished')
if not f[1] or journal_gone(ARGV[1], ARGV[2], f[1]) then return false end
local result = {f[1], f[2] or '0'}
for _, entry in ipairs(redis.call('LRANGE', journal .. ':e', 0, -1)) do result[#result + 1] = entry end
return result
`;

// ARGV: base, call, has an entry ('1'/'0'), the entry, retention ms ('' for kept), and for a fenced write the
// owner and lease ms ('' for none). {'ok'} | {'lease' | 'expired', session}
const JOURNAL_FINISH = `${PRELUDE}${JOURNALS}
local base, call = ARGV[1], ARGV[2]
local journal = base .. ':j:' .. call
local m = redis.call('HGET', journal, 'session')
if not m or journal_gone(base, call, m) then return {'ok'} end
if ARGV[6] ~= '' then
  local refused = fenced(base, m, ARGV[6], ARGV[7])
  if refused then return {refused[1], m} end
end
if ARGV[3] == '1' then redis.call('RPUSH', journal .. ':e', ARGV[4]) end
redis.call('HSET', journal, 'finished', '1')
redis.call('ZREM', base .. ':u', call)
if ARGV[5] == '' then
  redis.call('HDEL', journal, 'expires')
  redis.call('ZREM', base .. ':jx', call)
else
  local expires = now + tonumber(ARGV[5])
  redis.call('HSET', journal, 'expires', expires)
  redis.call('ZADD', base .. ':jx', expires, call)
end
return {'ok'}
`;

// ARGV: base, session, unfinished only ('1'/'0').
const JOURNAL_LIST = `${PRELUDE}${JOURNALS}
local result = {}
for _, call in ipairs(redis.call('LRANGE', ARGV[1] .. ':sj:' .. ARGV[2], 0, -1)) do
  local finished = redis.call('HGET', ARGV[1] .. ':j:' .. call, 'finished')
  if ARGV[3] == '1' then
    if finished ~= '1' then result[#result + 1] = call end
  elseif not journal_gone(ARGV[1], call, ARGV[2]) then
    result[#result + 1] = call
  end
end
return result
`;

// ARGV: base, call. 1 when it existed (and was not past its retention).
const JOURNAL_DELETE = `${PRELUDE}${JOURNALS}
local journal = ARGV[1] .. ':j:' .. ARGV[2]
local m = redis.call('HGET', journal, 'session')
if not m then return 0 end
if journal_gone(ARGV[1], ARGV[2], m) then return 0 end
drop_journal(ARGV[1], ARGV[2], m)
return 1
`;

// ARGV: base, start (ZRANGEBYLEX form), how many. Call, session, ... of unfinished calls from start.
const JOURNAL_UNFINISHED = `
local result = {}
for _, call in ipairs(redis.call('ZRANGEBYLEX', ARGV[1] .. ':u', ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[3]))) do
  local m = redis.call('HGET', ARGV[1] .. ':j:' .. call, 'session')
  if m then
    result[#result + 1] = call
    result[#result + 1] = m
  else
    redis.call('ZREM', ARGV[1] .. ':u', call)
  end
end
return result
`;

// ARGV: base, batch size. Drops up to that many journals past their retention; how many.
const JOURNAL_PRUNE = `${PRELUDE}${JOURNALS}
return prune(ARGV[1], tonumber(ARGV[2]))
`;

// Run logs. A run's hash `r:<run>`: `session`, `status`, `last` (its last event's number), `created`, `updated`,
// `result` (none: no result), `cancel` ('0'/'1'), `expires`; its events `r:<run>:e`, a list (event n at index
// n - 1), each `<length of its type>:<type><data>`; `rs:<session>` the session's runs, oldest first; `rx` the
// namespace's runs scored by when they expire, for pruning. Writes publish `<hex namespace>:<run>` on the
// store's run channel, which watchers of other processes hear.
const RUNS = `
local function drop_run(base, run)
  local r = base .. ':r:' .. run
  local session = redis.call('HGET', r, 'session')
  redis.call('DEL', r, r .. ':e')
  redis.call('ZREM', base .. ':rx', run)
  if session then redis.call('LREM', base .. ':rs:' .. session, 0, run) end
end
local function run_live(base, run)
  local expires = redis.call('HGET', base .. ':r:' .. run, 'expires')
  if not expires then return false end
  if tonumber(expires) > now then return true end
  drop_run(base, run)
  return false
end
local function prune_runs(base, most)
  local runs = redis.call('ZRANGEBYSCORE', base .. ':rx', '-inf', now, 'LIMIT', 0, most)
  for _, run in ipairs(runs) do
    if not run_live(base, run) then redis.call('ZREM', base .. ':rx', run) end
  end
  return #runs
end
local function run_fields(base, run, result)
  local f = redis.call('HMGET', base .. ':r:' .. run,
    'session', 'status', 'last', 'created', 'updated', 'result', 'cancel', 'expires')
  for i = 1, 8 do result[#result + 1] = f[i] or '' end
  return result
end
`;

// ARGV: base, run, session, status, ttl ms, channel, hex namespace. {'1' (created) | '0' (found), fields...}
const RUN_CREATE = `${PRELUDE}${RUNS}
local base, run = ARGV[1], ARGV[2]
prune_runs(base, ${PRUNE_BATCH})
if run_live(base, run) then return run_fields(base, run, {'0'}) end
local r = base .. ':r:' .. run
redis.call('DEL', r, r .. ':e')
redis.call('HSET', r, 'session', ARGV[3], 'status', ARGV[4], 'last', 0, 'created', now, 'updated', now,
  'cancel', '0', 'expires', now + tonumber(ARGV[5]))
redis.call('RPUSH', base .. ':rs:' .. ARGV[3], run)
redis.call('ZADD', base .. ':rx', now + tonumber(ARGV[5]), run)
redis.call('PUBLISH', ARGV[6], ARGV[7] .. ':' .. run)
return run_fields(base, run, {'1'})
`;

// ARGV: base, run, ttl ms, has a status ('1'/'0'), status, result ('' for none), channel, hex namespace, then
// the events. {last, cancel ('0'/'1')}, last -1 when the run is gone.
const RUN_APPEND = `${PRELUDE}${RUNS}
local base, run = ARGV[1], ARGV[2]
if not run_live(base, run) then return {-1, '0'} end
local r = base .. ':r:' .. run
local n = #ARGV - 8
for i = 9, #ARGV, 1000 do
  redis.call('RPUSH', r .. ':e', unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local last = tonumber(redis.call('HGET', r, 'last')) + n
local expires = now + tonumber(ARGV[3])
redis.call('HSET', r, 'last', last, 'updated', now, 'expires', expires)
if ARGV[4] == '1' then
  redis.call('HSET', r, 'status', ARGV[5])
  if ARGV[6] == '' then redis.call('HDEL', r, 'result') else redis.call('HSET', r, 'result', ARGV[6]) end
end
redis.call('ZADD', base .. ':rx', expires, run)
redis.call('PUBLISH', ARGV[7], ARGV[8] .. ':' .. run)
return {last, redis.call('HGET', r, 'cancel')}
`;

// ARGV: base, run, after, limit. {fields..., events...} or nil.
const RUN_READ = `${PRELUDE}${RUNS}
local base, run = ARGV[1], ARGV[2]
if not run_live(base, run) then return false end
local result = run_fields(base, run, {})
local after, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
if limit > 0 then
  for _, event in ipairs(redis.call('LRANGE', base .. ':r:' .. run .. ':e', after, after + limit - 1)) do
    result[#result + 1] = event
  end
end
return result
`;

// ARGV: base, session, after ('' for the start), how many, newest first ('1'/'0'). run, fields... for each.
const RUN_LIST = `${PRELUDE}${RUNS}
local base, session, want, newest = ARGV[1], ARGV[2], tonumber(ARGV[4]), ARGV[5] == '1'
local list = base .. ':rs:' .. session
local length = redis.call('LLEN', list)
local index = newest and length - 1 or 0
if ARGV[3] ~= '' then
  local at = redis.call('LPOS', list, ARGV[3])
  if at then index = newest and at - 1 or at + 1 end
end
local result, found = {}, 0
while found < want and index >= 0 and index < length do
  local run = redis.call('LINDEX', list, index)
  if run and run_live(base, run) then
    result[#result + 1] = run
    run_fields(base, run, result)
    found = found + 1
    index = newest and index - 1 or index + 1
  elseif run then
    -- Dropped: the list is one shorter, and going forward the next run is now at this index.
    length = length - 1
    if newest then index = index - 1 end
  else
    break
  end
end
return result
`;

// ARGV: base, run, channel, hex namespace. The run's fields after, or nil.
const RUN_CANCEL = `${PRELUDE}${RUNS}
local base, run = ARGV[1], ARGV[2]
if not run_live(base, run) then return false end
local r = base .. ':r:' .. run
local status = redis.call('HGET', r, 'status')
if status == 'waiting' then
  redis.call('HSET', r, 'status', 'cancelled', 'updated', now)
elseif status == 'queued' or status == 'running' then
  redis.call('HSET', r, 'cancel', '1')
end
redis.call('PUBLISH', ARGV[3], ARGV[4] .. ':' .. run)
return run_fields(base, run, {})
`;

// ARGV: base, run, channel, hex namespace. 1 when it existed (and had not expired).
const RUN_DELETE = `${PRELUDE}${RUNS}
local base, run = ARGV[1], ARGV[2]
local existed = run_live(base, run)
drop_run(base, run)
redis.call('PUBLISH', ARGV[3], ARGV[4] .. ':' .. run)
return existed and 1 or 0
`;

// ARGV: base, batch size. Drops up to that many runs past their time to live; how many were looked at.
const RUN_PRUNE = `${PRELUDE}${RUNS}
return prune_runs(ARGV[1], tonumber(ARGV[2]))
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
    turnId: string,
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
  lagentStoreJournalAppend(
    base: string,
    m: string,
    call: string,
    entry: string,
    owner: string,
    leaseMs: string,
  ): Promise<string[]>;
  lagentStoreJournalRead(base: string, call: string): Reply;
  lagentStoreJournalFinish(
    base: string,
    call: string,
    hasEntry: string,
    entry: string,
    retainMs: string,
    owner: string,
    leaseMs: string,
  ): Promise<string[]>;
  lagentStoreJournalList(base: string, m: string, unfinished: string): Promise<string[]>;
  lagentStoreJournalDelete(base: string, call: string): Promise<number>;
  lagentStoreJournalUnfinished(base: string, start: string, limit: number): Promise<string[]>;
  lagentStoreJournalPrune(base: string, batch: number): Promise<number>;
  lagentStoreRunCreate(
    base: string,
    run: string,
    session: string,
    status: string,
    ttlMs: number,
    channel: string,
    hexNamespace: string,
  ): Promise<string[]>;
  lagentStoreRunAppend(
    base: string,
    run: string,
    ttlMs: number,
    hasStatus: string,
    status: string,
    result: string,
    channel: string,
    hexNamespace: string,
    ...events: string[]
  ): Promise<[number, string]>;
  lagentStoreRunRead(base: string, run: string, after: number, limit: number): Reply;
  lagentStoreRunList(
    base: string,
    session: string,
    after: string,
    limit: number,
    newestFirst: string,
  ): Promise<string[]>;
  lagentStoreRunCancel(base: string, run: string, channel: string, hexNamespace: string): Reply;
  lagentStoreRunDelete(base: string, run: string, channel: string, hexNamespace: string): Promise<number>;
  lagentStoreRunPrune(base: string, batch: number): Promise<number>;
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
  lagentStoreJournalUnfinished: JOURNAL_UNFINISHED,
  lagentStoreJournalPrune: JOURNAL_PRUNE,
  lagentStoreRunCreate: RUN_CREATE,
  lagentStoreRunAppend: RUN_APPEND,
  lagentStoreRunRead: RUN_READ,
  lagentStoreRunList: RUN_LIST,
  lagentStoreRunCancel: RUN_CANCEL,
  lagentStoreRunDelete: RUN_DELETE,
  lagentStoreRunPrune: RUN_PRUNE,
};

/** Defines the scripts on a client (once per client: stores sharing one share them). */
export function defineStoreCommands(redis: Redis): Redis & RedisStoreCommands {
  const commands = redis as Redis & Partial<RedisStoreCommands>;
  if (commands.lagentStoreRunCreate === undefined) {
    for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 0, lua });
  }
  return redis as Redis & RedisStoreCommands;
}
