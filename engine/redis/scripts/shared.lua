-- A shared lock (engine.Sharer: a semaphore or a reader-writer lock), for
-- the scripts shared_*.lua, which all take the same keys, every one with
-- the name's hash tag (one Cluster slot):
--
--   KEYS[1] the name's mutex (distlock:{NAME}): a shared lock is refused
--           while it exists; also the wake-up channel
--   KEYS[2] the lock (HASH: k = kind, 1 semaphore or 2 rwlock; l = limit),
--           kept for the fence ttl after its last use, like the high-water
--   KEYS[3] the holders (ZSET owner -> lease deadline, server time in µs)
--   KEYS[4] the holders' details (HASH: 'o:<owner>' -> JSON {w: weight,
--           c: holds, t: token (a string), m: metadata, a: attempt id of
--           the last grant or re-entry, r: id of the last release}; u =
--           the permits held, the sum of the weights)
--   KEYS[5] the waiter queue (ZSET waiter -> arrival ticket)
--   KEYS[6] the waiters' heartbeat deadlines (ZSET waiter -> µs)
--   KEYS[7] the queue's state (HASH: n = last ticket, 'w:<id>' = the
--           permits waiter id asks for)
--   KEYS[8] the name's fencing high-water (the mutex's one counter)
--
-- ARGV[1] is the fence ttl in ms and ARGV[2] PUBLISH or SPUBLISH for every
-- script; their own arguments follow. Every time is the server's (TIME).
-- Every script first drops the holders whose deadline passed (their
-- permits come back) and the waiters whose heartbeat deadline passed, and
-- last sets the keys' expiry (sh_expire): the holders' keys expire with
-- the last holder's deadline, the queue's with the last waiter's, and the
-- lock (kind and limit) the fence ttl after this use, or later.
--
-- Waiting is strictly first come, first served with weights: a request is
-- granted only when its weight fits in the free permits and nobody is
-- queued ahead of it. Only the head of the queue is ever woken (a message
-- 'w:<id>' on the channel KEYS[1]), and only when its weight fits.

local MUTEX, LOCK, H, HD, SQ, SQD, SQS, FENCE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local FENCE_MS, PUB = ARGV[1], ARGV[2]

-- sh_int renders n exactly (Lua's own rendering is %.14g).
local function sh_int(n)
  return string.format('%d', n)
end

local function sh_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- sh_remove takes waiter id out of the queue.
local function sh_remove(id)
  if id ~= '' then
    redis.call('ZREM', SQ, id)
    redis.call('ZREM', SQD, id)
    redis.call('HDEL', SQS, 'w:' .. id)
  end
end

-- sh_drop drops the holder owner (its details v, decoded) and returns its
-- permits.
local function sh_drop(owner, h)
  redis.call('ZREM', H, owner)
  redis.call('HDEL', HD, 'o:' .. owner)
  if redis.call('HINCRBY', HD, 'u', sh_int(-h.w)) <= 0 then
    redis.call('DEL', HD)
  end
end

-- sh_queued tells whether waiters may be queued (set by sh_purge, and
-- when one enters): the paths without a queue skip its keys.
local sh_queued = false

-- sh_purge drops the holders whose lease ended and the waiters whose
-- heartbeat deadline passed.
local function sh_purge(now)
  for _, o in ipairs(redis.call('ZRANGEBYSCORE', H, '-inf', sh_int(now))) do
    local v = redis.call('HGET', HD, 'o:' .. o)
    if v then
      sh_drop(o, cjson.decode(v))
    else
      redis.call('ZREM', H, o)
    end
  end
  sh_queued = redis.call('EXISTS', SQ) == 1
  if sh_queued then
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', SQD, '-inf', sh_int(now))) do
      sh_remove(id)
    end
  end
end

-- sh_used returns the permits held.
local function sh_used()
  return tonumber(redis.call('HGET', HD, 'u') or '0')
end

-- sh_head returns the head of the queue and the permits it asks for.
local function sh_head()
  local h = sh_queued and redis.call('ZRANGE', SQ, 0, 0)[1]
  if not h then
    return nil, 0
  end
  return h, tonumber(redis.call('HGET', SQS, 'w:' .. h) or '1')
end

-- sh_wake wakes the head of the queue when its weight fits under limit; it
-- returns whether it did.
local function sh_wake(limit)
  local h, w = sh_head()
  if h and limit and w <= limit - sh_used() then
    redis.call(PUB, MUTEX, 'w:' .. h)
    return true
  end
  return false
end

-- sh_enqueue puts waiter id at the back of the queue (or leaves it where
-- it is), asking for weight permits, with a heartbeat deadline ttl ms from
-- now.
local function sh_enqueue(id, ttl, weight, now)
  sh_queued = true
  if not redis.call('ZSCORE', SQ, id) then
    redis.call('ZADD', SQ, redis.call('HINCRBY', SQS, 'n', 1), id)
  end
  redis.call('HSET', SQS, 'w:' .. id, weight)
  redis.call('ZADD', SQD, sh_int(now + tonumber(ttl) * 1000), id)
end

-- sh_expire sets the keys' expiry: the holders' with the last holder's
-- deadline, the queue's with the last waiter's (its state goes with the
-- queue), the lock's the fence ttl from now or when both have expired,
-- whichever is later.
local function sh_expire(now)
  local far = math.floor(now / 1000) + tonumber(FENCE_MS)
  local top = redis.call('ZRANGE', H, -1, -1, 'WITHSCORES')
  if top[2] then
    local at = math.ceil(tonumber(top[2]) / 1000)
    redis.call('PEXPIREAT', H, sh_int(at))
    redis.call('PEXPIREAT', HD, sh_int(at))
    far = math.max(far, at)
  end
  top = sh_queued and redis.call('ZRANGE', SQD, -1, -1, 'WITHSCORES') or {}
  if top[2] then
    local at = math.ceil(tonumber(top[2]) / 1000)
    redis.call('PEXPIREAT', SQ, sh_int(at))
    redis.call('PEXPIREAT', SQD, sh_int(at))
    redis.call('PEXPIREAT', SQS, sh_int(at))
    far = math.max(far, at)
  elseif sh_queued then
    redis.call('DEL', SQS)
  end
  redis.call('PEXPIREAT', LOCK, sh_int(far))
end

-- sh_mint returns the next fencing token of the name, as acquire.lua mints
-- it: high-water + 1, seeded from the server clock in µs when there is no
-- high-water, and with the time floor (floor '1') never below the clock.
local function sh_mint(floor)
  local token = redis.call('INCR', FENCE)
  if token == 1 then
    token = sh_now()
    redis.call('SET', FENCE, sh_int(token), 'PX', FENCE_MS)
  elseif floor == '1' then
    local now = sh_now()
    if now > token then
      token = now
      redis.call('SET', FENCE, sh_int(token), 'KEEPTTL')
    end
  end
  return sh_int(token)
end
