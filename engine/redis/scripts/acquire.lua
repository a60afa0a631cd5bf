-- Grants the lock KEYS[1] to ARGV[1] for ARGV[2] ms, or re-enters it.
-- KEYS[2..4]: the waiter queue (queue.lua); KEYS[5]: fencing high-water.
-- ARGV: owner, ttl ms, metadata, high-water ttl ms, attempt id, waiting
-- ('1' when the caller waits for a wake-up if the lock is held), time floor
-- ('1': a token is never below the server clock in microseconds), and for
-- a waiter of the queue (absent otherwise): waiter id, heartbeat ttl ms,
-- fair ('1'), behind ('1': do not take a free lock ahead of the queue),
-- PUBLISH or SPUBLISH, reservation µs, starvation bound µs (queue.lua),
-- no reservation ('1').
-- A request whose attempt id is the one recorded (none recorded: the
-- owner) is a retry of a request already applied: it does not count up
-- again. A refused waiting caller marks the lock so that its release
-- publishes a wake-up (and a grant made while waiters queue is marked); a
-- refused waiter enters the queue.
-- Returns the token (a string) on a first grant, {1, token, holds} on
-- re-entry, {0, holder, pttl} when another owner holds it, and for a waiter
-- {0, holder, pttl, queued, head, reserved} ('' and the reservation's time
-- left for a free lock kept for the queue).
local waiter = ARGV[8] or ''
local queued = redis.call('EXISTS', Q) == 1

-- refuse answers a refusal; a waiter enters the queue.
local function refuse(holder, pttl, reserved, now)
  if waiter == '' then
    return {0, holder, pttl, 0, 0, reserved}
  end
  now = now or q_now()
  q_settle(now)
  q_enqueue(waiter, ARGV[9], ARGV[10] == '1', now, {ARGV[12], ARGV[13], ARGV[14]}, ARGV[15] == '1')
  return {0, holder, pttl, 1, q_head() == waiter and 1 or 0, reserved}
end

local v = redis.call('GET', KEYS[1])
if not v then
  if queued then
    local now = q_now()
    q_settle(now)
    local rv = redis.call('HGET', QS, 'rv')
    local h = q_head()
    local behind = false
    if not rv and h and h ~= waiter and (redis.call('HEXISTS', QS, 'f:' .. h) == 1 or
        ARGV[10] == '1' or ARGV[11] == '1') then
      -- A fair head (or a fair or polite newcomer): the lock waits for the
      -- head, which is woken (and the lock reserved when it is due).
      q_wake(now, true)
      rv = redis.call('HGET', QS, 'rv')
      behind = true
    end
    if behind or (rv and rv ~= waiter) then
      local left = 0
      if rv then
        left = math.floor((tonumber(redis.call('HGET', QS, 'ru')) - now) / 1000)
      end
      return refuse('', math.max(left, 1), 1, now)
    end
    if waiter ~= '' then
      q_remove(waiter) -- granted: it leaves the queue (and its reservation)
    end
    queued = redis.call('EXISTS', Q) == 1
  end
  -- token = high-water + 1. Without a high-water (first grant, FLUSHALL, a
  -- restart without persistence, or its ttl ran out) the token is seeded
  -- from the server clock in microseconds. Every grant takes longer than a
  -- microsecond, so tokens never run ahead of the clock that seeded them,
  -- and a later seed is above them all unless the clock was set back.
  --
  -- With the time floor, token = max(high-water + 1, server clock in µs),
  -- which also stays above the tokens a failover to a replica lost (they
  -- were never ahead of the old master's clock).
  local token = redis.call('INCR', KEYS[5])
  if token == 1 then
    local t = redis.call('TIME')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[5], string.format('%d', token), 'PX', ARGV[4])
  elseif ARGV[7] == '1' then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if now > token then
      token = now
      redis.call('SET', KEYS[5], string.format('%d', token), 'KEEPTTL')
    end
  end
  token = string.format('%d', token) -- exact: Lua's own rendering is %.14g
  -- While waiters queue, the grant is marked: its release wakes the head.
  if ARGV[3] == '' and ARGV[5] == ARGV[1] then
    v = token .. (queued and '*' or ' ') .. ARGV[1]
  else
    v = cjson.encode({o = ARGV[1], c = 1, t = token, m = ARGV[3], a = ARGV[5], w = queued or nil})
  end
  redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
  return token
end
local s = decode(v)
if s.o ~= ARGV[1] then
  if ARGV[6] == '1' and not s.w then
    s.w = true
    redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
  end
  return refuse(s.o, redis.call('PTTL', KEYS[1]), 0)
end
if (s.a or s.o) ~= ARGV[5] then
  s.c = s.c + 1
  s.a = ARGV[5]
end
if waiter ~= '' and queued then
  q_remove(waiter)
end
redis.call('SET', KEYS[1], encode(s), 'PX', ARGV[2])
return {1, s.t, s.c}
