-- A shared lock (engine.Sharer: a semaphore or a reader-writer lock), for
-- the scripts shared_*.lua, which all take the same keys, every one with
-- the name's hash tag (one Cluster slot):
--
--   KEYS[1] the name's mutex (distlock:{NAME}): a shared lock is refused
--           while it exists; also the wake-up channel
--   KEYS[2] the lock (HASH): k = kind (1 semaphore, 2 rwlock), l = limit,
--           u = the permits held (the sum of the holders' weights), x =
--           the key's expiry (ms), and for each holder 'o:<owner>' = JSON
--           {w: weight, c: holds, t: token (a string), m: metadata, a:
--           attempt id of the last grant or re-entry, r: id of the last
--           release, q: the queue entry the grant took, which an Undo
--           puts back: sh_taken}
--   KEYS[3] the holders (ZSET owner -> lease deadline, server time in µs)
--   KEYS[4] the waiter queue (ZSET waiter -> arrival ticket)
--   KEYS[5] the waiters' heartbeat deadlines (ZSET waiter -> µs)
--   KEYS[6] the queue's state (HASH: n = last ticket, 'w:<id>' = the
--           permits waiter id asks for, 't:<id>' = when it entered, µs,
--           'c:<id>' = the channel of its wake-ups, which the engine its
--           latest attempt came through listens on: sh_follow)
--   KEYS[7] the name's fencing high-water (the mutex's one counter)
--   KEYS[8] (shared_extend.lua and shared_force_release.lua only) the
--           name's taken-over marks (taken.lua), the mutex's too
--   KEYS[8], KEYS[9] (shared_acquire.lua and shared_set_limit.lua only)
--           the mutex's queue's heartbeat deadlines and state (queue.lua's
--           KEYS[3], KEYS[4]): live waiters queued for the mutex refuse a
--           shared lock (sh_mutex_queued)
--
-- ARGV[1] is the fence ttl in ms and ARGV[2] PUBLISH or SPUBLISH for every
-- script; their own arguments follow. Every time is the server's (TIME).
--
-- Every script first drops the holders whose deadline passed (their
-- permits come back) and the waiters whose heartbeat deadline passed. A
-- dead holder's entries stay until a script runs on the name, and the
-- lock and its holders expire together, at x: at least half the fence ttl
-- ahead and never before a holder's or waiter's deadline (sh_keep moves x
-- to the fence ttl from now when it comes closer, so the uncontended path
-- sets no expiry). The queue's keys expire with the last heartbeat
-- deadline or later (sh_expire).
--
-- Waiting is strictly first come, first served with weights: a request is
-- granted only when its weight fits in the free permits and nobody is
-- queued ahead of it. Only the head of the queue is ever woken (a message
-- 'w:<id>' on its engine's channel, or KEYS[1] when it named none), and
-- only when its weight fits (or can never fit: sh_due).

local MUTEX, LOCK, H, SQ, SQD, SQS, FENCE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local FENCE_MS, PUB = ARGV[1], ARGV[2]

-- sh_int renders n exactly (Lua's own rendering is %.14g).
local function sh_int(n)
  return string.format('%d', n)
end

local function sh_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- sh_hold_deadline is the lease deadline (µs) an acquire or renewal sets
-- for owner, which has holds holds, when it asks for deadline: while it
-- holds the lock more than once, only a later one than its deadline now
-- (engine.HoldExpiry: no hold's lease outlives the lock).
local function sh_hold_deadline(holds, owner, deadline)
  if holds > 1 then
    local d = tonumber(redis.call('ZSCORE', H, owner) or '0')
    if d > deadline then
      return d
    end
  end
  return deadline
end

-- sh_queued tells whether waiters may be queued (set by sh_purge, and
-- when one enters): the paths without a queue skip its keys.
local sh_queued = false

-- sh_known caches sh_head's answer until the queue changes (sh_remove,
-- sh_enqueue): {head, permits, channel}, or nil.
local sh_known

-- sh_remove takes waiter id out of the queue.
local function sh_remove(id)
  if id ~= '' and sh_queued then
    sh_known = nil
    redis.call('ZREM', SQ, id)
    redis.call('ZREM', SQD, id)
    redis.call('HDEL', SQS, 'w:' .. id, 't:' .. id, 'c:' .. id)
  end
end

-- sh_drop drops the holder owner (h, its details decoded), whose permits
-- come back: used is the permits held before.
local function sh_drop(owner, h, used)
  redis.call('ZREM', H, owner)
  redis.call('HDEL', LOCK, 'o:' .. owner)
  redis.call('HSET', LOCK, 'u', sh_int(used - h.w))
  return used - h.w
end

-- sh_purge drops the holders whose lease ended (and lists them in
-- sh_dropped: the caller's read of their details is stale) and the waiters
-- whose heartbeat deadline passed; used is the permits held before, and it
-- returns them after. It also tells whether the mutex exists, when the
-- caller asks (mutex true).
local sh_dropped = {}
local function sh_purge(now, used, mutex)
  -- Nobody holds permits (u = 0): no holder to drop.
  for _, o in ipairs(used > 0 and redis.call('ZRANGEBYSCORE', H, '-inf', sh_int(now)) or {}) do
    local v = redis.call('HGET', LOCK, 'o:' .. o)
    sh_dropped[o] = true
    if v then
      used = sh_drop(o, cjson.decode(v), used)
    else
      redis.call('ZREM', H, o)
    end
  end
  local n
  if mutex then
    -- One call for the common case: neither the mutex nor a queue.
    n = redis.call('EXISTS', MUTEX, SQ)
    sh_queued = n > 0 and redis.call('EXISTS', SQ) == 1
    n = n > (sh_queued and 1 or 0)
  else
    sh_queued = redis.call('EXISTS', SQ) == 1
  end
  if sh_queued then
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', SQD, '-inf', sh_int(now))) do
      sh_remove(id)
    end
  end
  return used, n
end

-- sh_mutex_queued tells whether live waiters queue for the name's mutex
-- (queue.lua's heartbeat deadlines mqd and state mqs): queued waiters bind
-- the name to their kind, as holders do. An entry whose heartbeat
-- deadline passed, or whose reservation lapsed (queue.lua's q_settle drops
-- it), does not count.
local function sh_mutex_queued(now, mqd, mqs)
  if redis.call('EXISTS', mqd) == 0 then
    return false
  end
  local live = redis.call('ZCOUNT', mqd, '(' .. sh_int(now), '+inf')
  if live > 0 then
    local rv = redis.call('HMGET', mqs, 'rv', 'ru')
    if rv[1] and now >= tonumber(rv[2] or '0') and tonumber(redis.call('ZSCORE', mqd, rv[1]) or '0') > now then
      live = live - 1 -- its reservation lapsed
    end
  end
  return live > 0
end

-- sh_head returns the head of the queue, the permits it asks for and the
-- channel of its wake-ups.
local function sh_head()
  if not sh_known then
    local h = sh_queued and redis.call('ZRANGE', SQ, 0, 0)[1]
    if not h then
      return nil, 0, MUTEX -- not cached: sh_queued may change
    end
    local f = redis.call('HMGET', SQS, 'w:' .. h, 'c:' .. h)
    sh_known = {h, tonumber(f[1] or '1'), f[2] or MUTEX}
  end
  return sh_known[1], sh_known[2], sh_known[3]
end

-- sh_due tells whether the head of the queue, asking for w permits, has
-- an attempt to make: w fits in the permits free (limit - used), or it is
-- above the limit (a SetLimit shrank it under the head) and never will, so
-- its attempt is refused as bad input and it leaves the queue, not holding
-- up the waiters behind it for good.
local function sh_due(w, limit, used)
  return limit and (w <= limit - used or w > limit)
end

-- sh_wake wakes the head of the queue when it has an attempt to make
-- (sh_due); it returns whether it did.
local function sh_wake(limit, used)
  local h, w, ch = sh_head()
  if h and sh_due(w, limit, used) then
    redis.call(PUB, ch, 'w:' .. h)
    return true
  end
  return false
end

-- sh_follow records, for queued waiter id, the permits its latest attempt
-- asks for (weight) and the channel of its wake-ups (ch, '': KEYS[1]), each
-- when it is not the one recorded: the channel follows the waiter to the
-- engine its latest attempt came through. A waiter attempts again whenever
-- its subscription is (re)made, so that is the engine that listens for it
-- now: a remote waiter whose server restarted or died comes back through
-- another server's engine, whose channel is not the one it entered the
-- queue with. One HMGET, no write, when nothing changed. (Heartbeats leave
-- the channel: shared_extend.lua; queue.lua's q_follow is the mutex's.)
local function sh_follow(id, weight, ch)
  local was = redis.call('HMGET', SQS, 'w:' .. id, 'c:' .. id)
  if tonumber(was[1]) ~= tonumber(weight) then
    redis.call('HSET', SQS, 'w:' .. id, weight)
  end
  if ch == '' then
    if was[2] then
      redis.call('HDEL', SQS, 'c:' .. id)
    end
  elseif was[2] ~= ch then
    redis.call('HSET', SQS, 'c:' .. id, ch)
  end
end

-- sh_enqueue puts waiter id at the back of the queue (or leaves it where
-- it is: sh_follow), asking for weight permits, with a heartbeat deadline
-- ttl ms from now and its wake-ups on channel ch ('' or nil: KEYS[1]); the
-- queue's keys expire with the last deadline.
local function sh_enqueue(id, ttl, weight, now, ch)
  sh_queued = true
  sh_known = nil
  if redis.call('ZSCORE', SQ, id) then
    sh_follow(id, weight, ch or '')
  else
    redis.call('ZADD', SQ, redis.call('HINCRBY', SQS, 'n', 1), id)
    if ch and ch ~= '' then
      redis.call('HSET', SQS, 't:' .. id, sh_int(now), 'w:' .. id, weight, 'c:' .. id, ch)
    else
      redis.call('HSET', SQS, 't:' .. id, sh_int(now), 'w:' .. id, weight)
    end
  end
  redis.call('ZADD', SQD, sh_int(now + tonumber(ttl) * 1000), id)
end

-- sh_taken returns waiter id's queue entry, which a grant is about to
-- take out of the queue, as shared_acquire.lua records it in the holder's
-- details (q), so that an Undo of the grant puts it back (sh_requeue);
-- nil when id is not queued.
local function sh_taken(id)
  local n = id ~= '' and sh_queued and redis.call('ZSCORE', SQ, id)
  if not n then
    return nil
  end
  local f = redis.call('HMGET', SQS, 't:' .. id, 'w:' .. id, 'c:' .. id)
  return {i = id, n = tonumber(n), d = tonumber(redis.call('ZSCORE', SQD, id) or '0'), t = f[1], w = f[2], c = f[3]}
end

-- sh_requeue puts back the queue entry e (sh_taken) of a grant undone, at
-- its arrival ticket (requeue.lua), when its heartbeat deadline has not
-- passed: the undone grant leaves the queue as if it had not been made.
local function sh_requeue(e, now)
  if e.d <= now then
    return
  end
  sh_queued = true
  sh_known = nil
  if not requeue(SQ, SQD, SQS, e) then
    return
  end
  redis.call('HSET', SQS, 't:' .. e.i, e.t or sh_int(now), 'w:' .. e.i, e.w or '1')
  if e.c then
    redis.call('HSET', SQS, 'c:' .. e.i, e.c)
  end
end

-- sh_expire keeps the queue's keys, which share one expiry, until at
-- least the last heartbeat deadline (set, when they would expire sooner,
-- to twice as far from now as that deadline, so that most calls set
-- nothing), or deletes its state when nobody queues; it returns the
-- deadline (µs, 0 for none). now is the script's time (µs).
local function sh_expire(now)
  if not sh_queued then
    return 0
  end
  local top = redis.call('ZRANGE', SQD, -1, -1, 'WITHSCORES')
  if not top[2] then
    redis.call('DEL', SQS)
    return 0
  end
  local last = tonumber(top[2])
  local left = redis.call('PTTL', SQ)
  if left < 0 or now + left * 1000 < last then
    local at = sh_int(math.ceil((last + math.max(last - now, 0)) / 1000))
    redis.call('PEXPIREAT', SQ, at)
    redis.call('PEXPIREAT', SQD, at)
    redis.call('PEXPIREAT', SQS, at)
  end
  return last
end

-- sh_keep keeps the lock and its holders until at least deadline (µs) and
-- half the fence ttl from now: x, the expiry set (ms, from the lock's
-- hash), is moved to the fence ttl from now (or the deadline) when it is
-- closer; fresh is true when the holders' key was just made (it has no
-- expiry yet).
local function sh_keep(now, x, deadline, fresh)
  local ms = tonumber(FENCE_MS)
  local need = math.max(math.ceil(deadline / 1000), math.floor(now / 1000) + math.floor(ms / 2))
  x = tonumber(x or '0')
  if x < need then
    x = math.max(math.ceil(deadline / 1000), math.floor(now / 1000) + ms)
    redis.call('HSET', LOCK, 'x', sh_int(x))
    redis.call('PEXPIREAT', LOCK, sh_int(x))
    fresh = true
  end
  if fresh then
    redis.call('PEXPIREAT', H, sh_int(x))
  end
end

-- sh_mint returns the next fencing token of the name, as acquire.lua mints
-- it: max(high-water + 1, now, the server clock in µs, or the proposed
-- token when it stands in for it: proposal.lua); with the time floor off
-- (floor '0') high-water + 1, seeded from now when there is none;
-- nil, having changed nothing, when the high-water is past 2^53-1.
local function sh_mint(floor, now)
  now = proposed(floor, now) -- proposal.lua, before this file
  local token = incr_high_water(FENCE) -- highwater.lua, before this file
  if not token then
    return nil
  end
  if token == 1 then
    token = now
    redis.call('SET', FENCE, sh_int(token), 'PX', FENCE_MS)
  elseif floor ~= '0' then
    if now > token then
      token = now
      redis.call('SET', FENCE, sh_int(token), 'KEEPTTL')
    end
  end
  return sh_int(token)
end
