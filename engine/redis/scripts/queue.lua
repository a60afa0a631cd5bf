-- The waiter queue of a lock (see engine.Queuer), for the scripts that
-- touch it. Key layout: KEYS[1] the lock (its name is also the wake-up
-- channel), KEYS[2] the queue (ZSET waiter -> arrival ticket), KEYS[3] the
-- heartbeat deadlines (ZSET waiter -> server time in µs), KEYS[4] its state
-- (HASH: n = last ticket, rv = the waiter the lock is reserved for, ru = the
-- reservation's end in µs, f:<id> = '1' for a fair waiter, x:<id> = '1' for
-- a waiter the lock is never reserved for (a quorum's), w:<id> = when
-- the waiter entered the queue, in µs, c:<id> = the channel of its
-- wake-ups, which the engine its latest attempt came through listens on
-- (q_follow; absent: the lock's own); and, as the waiters'
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

-- The reservation (rv, ru) as this run knows it: read once (q_res), then
-- kept in step with every write of it (q_reserve, q_remove).
local q_rv, q_ru, q_known = nil, nil, false

-- q_res returns the waiter the lock is reserved for and the reservation's
-- end in µs (nil, nil when it is not reserved).
local function q_res()
  if not q_known then
    local r = redis.call('HMGET', QS, 'rv', 'ru')
    q_rv, q_ru, q_known = r[1] or nil, tonumber(r[2] or 0), true
  end
  return q_rv, q_ru
end

local function q_reserve(id, ends)
  redis.call('HSET', QS, 'rv', id, 'ru', q_int(ends))
  q_rv, q_ru, q_known = id, ends, true
end

local function q_remove(id)
  redis.call('ZREM', Q, id)
  redis.call('ZREM', QD, id)
  if q_res() == id then
    redis.call('HDEL', QS, 'f:' .. id, 'w:' .. id, 'x:' .. id, 'c:' .. id, 'rv', 'ru')
    q_rv, q_ru = nil, nil
  else
    redis.call('HDEL', QS, 'f:' .. id, 'w:' .. id, 'x:' .. id, 'c:' .. id)
  end
end

-- q_settle drops the waiters whose heartbeat deadline passed and a lapsed
-- reservation, whose waiter is skipped (dropped from the queue). Settling
-- again at the same time changes nothing, and is skipped.
local q_settled
local function q_settle(now)
  if q_settled == now then
    return
  end
  q_settled = now
  local rv, ru = q_res()
  if rv and now >= ru then
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

-- q_keep keeps the queue's three keys, which always share one expiry, at
-- least half as long again as ttl ms (they are set to twice ttl when they
-- would not).
local function q_keep(ttl)
  local left = redis.call('PTTL', Q)
  if left < ttl * 1.5 then
    local keep = q_int(math.max(ttl * 2, left))
    for _, k in ipairs({Q, QD, QS}) do
      redis.call('PEXPIRE', k, keep)
    end
  end
end

-- q_touch sets the heartbeat deadline of waiter id to ttl ms from now, and
-- keeps the queue's keys past it (q_keep).
local function q_touch(id, ttl, now)
  ttl = tonumber(ttl)
  redis.call('ZADD', QD, q_int(now + ttl * 1000), id)
  q_keep(ttl)
end

-- q_taken returns waiter id's queue entry, which a grant is about to take
-- out of the queue (q_remove), for the lock's value to keep (field q), so
-- that an Undo of the grant puts it back (q_requeue); nil when id is not
-- queued.
local function q_taken(id)
  local n = redis.call('ZSCORE', Q, id)
  if not n then
    return nil
  end
  local f = redis.call('HMGET', QS, 'w:' .. id, 'f:' .. id, 'x:' .. id, 'c:' .. id)
  return {i = id, n = tonumber(n), d = tonumber(redis.call('ZSCORE', QD, id) or '0'), w = f[1], f = f[2], x = f[3], c = f[4]}
end

-- q_requeue puts back the queue entry e (q_taken) of a grant undone, at
-- its arrival ticket (requeue.lua), when its heartbeat deadline has not
-- passed: the undone grant leaves the queue as if it had not been made.
local function q_requeue(e, now)
  if e.d <= now or not requeue(Q, QD, QS, e) then
    return
  end
  local fields = {'w:' .. e.i, e.w or q_int(now)}
  for _, f in ipairs({'f', 'x', 'c'}) do
    if e[f] then
      table.insert(fields, f .. ':' .. e.i)
      table.insert(fields, e[f])
    end
  end
  redis.call('HSET', QS, unpack(fields))
  q_keep(math.ceil((e.d - now) / 1000))
end

-- q_follow records ch as the channel of queued waiter id's wake-ups ('':
-- the lock's own) when it is not the one recorded: the channel follows the
-- waiter to the engine its latest attempt came through. A waiter attempts
-- again whenever its subscription is (re)made, so that is the engine that
-- listens for it now: a remote waiter whose server restarted or died comes
-- back through another server's engine, whose channel is not the one it
-- entered the queue with. (Heartbeats leave it: heartbeat.lua.)
local function q_follow(id, ch)
  local was = redis.call('HGET', QS, 'c:' .. id)
  if ch == '' then
    if was then
      redis.call('HDEL', QS, 'c:' .. id)
    end
  elseif was ~= ch then
    redis.call('HSET', QS, 'c:' .. id, ch)
  end
end

-- q_enqueue puts waiter id at the back of the queue (or leaves it where it
-- is, its wake-ups now on ch: q_follow) and sets its heartbeat deadline to
-- ttl ms from now; cfg is {pub, reserve µs, starve µs} of the waiter's
-- engine, ch the channel of its wake-ups ('' or nil: the lock's own).
local function q_enqueue(id, ttl, fair, now, cfg, noreserve, ch)
  if redis.call('ZSCORE', Q, id) then
    q_follow(id, ch or '')
  else
    redis.call('ZADD', Q, q_int(redis.call('HINCRBY', QS, 'n', 1)), id)
    local fields = {'p', cfg[1], 'r', cfg[2], 's', cfg[3], 'w:' .. id, q_int(now)}
    if fair then
      table.insert(fields, 'f:' .. id)
      table.insert(fields, '1')
    end
    if noreserve then
      table.insert(fields, 'x:' .. id)
      table.insert(fields, '1')
    end
    if ch and ch ~= '' then
      table.insert(fields, 'c:' .. id)
      table.insert(fields, ch)
    end
    redis.call('HSET', QS, unpack(fields))
  end
  q_touch(id, ttl, now)
end

-- q_unheard is the longest a reservation whose wake-up reached nobody is
-- kept, in µs: distlock.WaiterTTL, the heartbeat ttl of every Go waiter
-- (their own heartbeat deadline comes first), which also bounds an entry
-- queued straight on an engine with a longer ttl and never heartbeated.
local q_unheard = 3000000

-- q_reserved is the end (µs) of a reservation made now for head h, of r
-- µs when its wake-up was heard (delivered to a subscriber of its
-- channel); else until h's heartbeat deadline, at most q_unheard from now
-- (and never under r): a head whose engine was not listening (its
-- subscription lost in a failover or a reconnect, and not made again yet)
-- keeps its turn, which its next heartbeat (answered Wake) or its attempt
-- after subscribing again takes, while a dead head is dropped when its
-- heartbeats lapse.
local function q_reserved(h, now, r, heard)
  if heard then
    return now + r
  end
  local d = tonumber(redis.call('ZSCORE', QD, h) or 0)
  return math.max(now + r, math.min(d, now + q_unheard))
end

-- q_wake runs when the lock is free: it publishes a wake-up addressed to
-- the head ('w:<id>' on its engine's channel, else the lock's) when the
-- head is due (fair, or it entered the queue s µs ago or more) or when
-- wake is true (a release), and reserves the lock for a due head, for r
-- µs or, when the wake-up reached nobody (PUBLISH's, or on a Cluster
-- SPUBLISH's shard's, count of receivers is 0), longer: q_reserved.
local function q_wake(now, wake)
  if q_res() then
    return
  end
  local h = q_head()
  if not h then
    return
  end
  local cfg = redis.call('HMGET', QS, 'w:' .. h, 'f:' .. h, 'p', 'r', 's', 'x:' .. h, 'c:' .. h)
  local since = cfg[1]
  local due = cfg[2] == '1' or
    (not cfg[6] and since and now - tonumber(since) >= tonumber(cfg[5] or 1000))
  if not (due or wake) then
    return
  end
  local heard = redis.call(cfg[3] or 'PUBLISH', cfg[7] or KEYS[1], 'w:' .. h) > 0
  if due then
    q_reserve(h, q_reserved(h, now, tonumber(cfg[4] or 250000), heard))
  end
end

-- q_freed wakes the waiters of a lock just freed: the head of its queue
-- (on its engine's channel), and everyone subscribed to the lock's own
-- channel (a message for all, with command pub): waiters outside a queue
-- and an election's observers. The message is 'E <token>', the term that
-- ended (engine/redis/notice.go), or 'released' when token is nil. Under
-- contention nobody but observers listens there: the message costs the
-- server one lookup.
local function q_freed(pub, token)
  if redis.call('EXISTS', Q) == 1 then
    local now = q_now()
    q_settle(now)
    q_wake(now, true)
  end
  redis.call(pub, KEYS[1], token and ('E ' .. token) or 'released')
end
