-- The waiter queue of a lock (see engine.Queuer), for the scripts that
-- touch it. Key layout: KEYS[1] the lock (its name is also the wake-up
-- channel), KEYS[2] the queue (ZSET waiter -> arrival ticket), KEYS[3] the
-- heartbeat deadlines (ZSET waiter -> server time in µs), KEYS[4] its state
-- (HASH: n = last ticket, rv = the waiter the lock is reserved for, ru = the
-- reservation's end in µs, f:<id> = '1' for a fair waiter, x:<id> = '1' for
-- a waiter the lock is never reserved for (a quorum's), w:<id> = when
-- the waiter entered the queue, in µs; and, as the waiters'
-- engines set them, p = PUBLISH or SPUBLISH, r = the reservation's length
-- and s = the starvation bound, in µs). Every time is the server's. The
-- three keys expire with the longest heartbeat ttl left.

local Q, QD, QS = KEYS[2], KEYS[3], KEYS[4]

local function q_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function q_int(n)
  return string.format('%d', n)
end

local function q_remove(id)
  redis.call('ZREM', Q, id)
  redis.call('ZREM', QD, id)
  redis.call('HDEL', QS, 'f:' .. id, 'w:' .. id, 'x:' .. id)
  if redis.call('HGET', QS, 'rv') == id then
    redis.call('HDEL', QS, 'rv', 'ru')
  end
end

-- q_settle drops the waiters whose heartbeat deadline passed and a lapsed
-- reservation, whose waiter is skipped (dropped from the queue).
local function q_settle(now)
  local rv = redis.call('HGET', QS, 'rv')
  if rv and now >= tonumber(redis.call('HGET', QS, 'ru') or 0) then
    q_remove(rv)
  end
  local dead = redis.call('ZRANGEBYSCORE', QD, '-inf', q_int(now))
  for _, id in ipairs(dead) do
    q_remove(id)
  end
end

local function q_head()
  return redis.call('ZRANGE', Q, 0, 0)[1]
end

-- q_touch sets the heartbeat deadline of waiter id to ttl ms from now; the
-- queue's keys live at least twice as long.
local function q_touch(id, ttl, now)
  redis.call('ZADD', QD, q_int(now + tonumber(ttl) * 1000), id)
  local keep = q_int(math.max(tonumber(ttl) * 2, redis.call('PTTL', Q)))
  for _, k in ipairs({Q, QD, QS}) do
    redis.call('PEXPIRE', k, keep)
  end
end

-- q_enqueue puts waiter id at the back of the queue (or leaves it where it
-- is) and sets its heartbeat deadline to ttl ms from now; cfg is {pub,
-- reserve µs, starve µs} of the waiter's engine.
local function q_enqueue(id, ttl, fair, now, cfg, noreserve)
  if not redis.call('ZSCORE', Q, id) then
    redis.call('ZADD', Q, q_int(redis.call('HINCRBY', QS, 'n', 1)), id)
    if fair then
      redis.call('HSET', QS, 'f:' .. id, '1')
    end
    if noreserve then
      redis.call('HSET', QS, 'x:' .. id, '1')
    end
    redis.call('HSET', QS, 'p', cfg[1], 'r', cfg[2], 's', cfg[3], 'w:' .. id, q_int(now))
  end
  q_touch(id, ttl, now)
end

-- q_wake runs when the lock is free: it reserves the lock for the head when
-- the head is fair or entered the queue s µs ago or more, and publishes a
-- wake-up addressed to the head ('w:<id>' on the lock's channel) when it
-- reserved or when wake is true (a release).
local function q_wake(now, wake)
  if redis.call('HEXISTS', QS, 'rv') == 1 then
    return
  end
  local h = q_head()
  if not h then
    return
  end
  local cfg = redis.call('HMGET', QS, 'w:' .. h, 'f:' .. h, 'p', 'r', 's', 'x:' .. h)
  local since = cfg[1]
  local due = cfg[2] == '1' or
    (not cfg[6] and since and now - tonumber(since) >= tonumber(cfg[5] or 1000))
  if due then
    redis.call('HSET', QS, 'rv', h, 'ru', q_int(now + tonumber(cfg[4] or 250000)))
  end
  if due or wake then
    redis.call(cfg[3] or 'PUBLISH', KEYS[1], 'w:' .. h)
  end
end

-- q_freed wakes the waiters of a lock just freed: the head of its queue,
-- or, when nobody queues, everyone waiting outside a queue (a message for
-- all on the lock's channel, with command pub).
local function q_freed(pub)
  if redis.call('EXISTS', Q) == 1 then
    local now = q_now()
    q_settle(now)
    q_wake(now, true)
  end
  if redis.call('EXISTS', Q) == 0 then
    redis.call(pub, KEYS[1], 'released')
  end
end
