-- Grants ARGV[11] permits of the shared lock (shared.lua) to owner
-- ARGV[3] for ARGV[4] ms, or re-enters it.
-- ARGV: fence ttl ms, PUBLISH or SPUBLISH, owner, ttl ms, metadata,
-- attempt id, waiter id ('' outside the queue), heartbeat ttl ms, kind (1
-- semaphore, 2 rwlock), limit, weight, time floor ('0': off, as acquire.lua),
-- the channel of the waiter's wake-ups ('': KEYS[1]; its engine's: a
-- queued waiter's entry records it anew when its attempt comes through
-- another engine, shared.lua's sh_follow).
-- KEYS: shared.lua's seven, then the mutex's queue's heartbeat deadlines
-- and state (queue.lua's KEYS[3] and KEYS[4]).
-- The lock is made with the kind and limit asked when it does not exist;
-- once it exists, its stored limit governs (a semaphore's limit asked is
-- not compared: SetLimit changes the stored one).
-- Refused with an error reply, having changed nothing: 'DISTLOCK mutex'
-- (the name is held as a mutex, or live waiters queue for its mutex:
-- queued waiters bind the name to their kind, as holders do; an entry
-- whose heartbeat deadline passed, or whose reservation lapsed, does not
-- count), 'DISTLOCK kind <k>' (the lock is of kind
-- k), 'DISTLOCK weight <l>' (the weight is not between 1 and the stored
-- limit l), 'DISTLOCK held <w>'
-- (the owner holds w permits of a semaphore), 'DISTLOCK upgrade' (the
-- owner holds the other side of a reader-writer lock).
-- An owner that holds the lock re-enters (its holds go up unless the
-- attempt id is the one recorded: a retry); otherwise the permits are
-- granted when they fit and nobody is queued ahead (the waiter itself at
-- the head is not ahead of itself), and the next head is woken if it fits
-- too. A refused waiter enters the queue (or stays in its place), and the
-- head is woken if it fits (a head that died).
-- Returns {1, token, holds} when granted, else {0, holder, µs left,
-- queued, head, reserved}: the holder whose lease ends first and its time
-- left (engine.ReserveTTL when nobody holds it), and reserved = 1 when the
-- permits are free enough but kept for the queue ('' holder).
local owner, ttl, waiter = ARGV[3], tonumber(ARGV[4]), ARGV[7]
local kind, limit, weight = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'k', 'l', 'u', 'x', 'o:' .. owner)
local used, mutex = sh_purge(now, tonumber(lk[3] or '0'), true)
if mutex then
  return redis.error_reply('DISTLOCK mutex')
end
if sh_mutex_queued(now, KEYS[8], KEYS[9]) then
  return redis.error_reply('DISTLOCK mutex')
end
local k, l = tonumber(lk[1]), tonumber(lk[2])
if not k then
  k, l = kind, limit
elseif k ~= kind then
  return redis.error_reply('DISTLOCK kind ' .. k)
end
if weight < 1 or weight > l then
  return redis.error_reply('DISTLOCK weight ' .. sh_int(l))
end
if not lk[1] then
  redis.call('HSET', LOCK, 'k', k, 'l', sh_int(l))
end
local deadline = now + ttl * 1000
-- The owner's details, unless the purge just dropped them.
local v = not sh_dropped[owner] and lk[5]
if v then -- re-entry
  local h = cjson.decode(v)
  if h.w ~= weight then
    if k == 2 then
      return redis.error_reply('DISTLOCK upgrade')
    end
    return redis.error_reply('DISTLOCK held ' .. sh_int(h.w))
  end
  if h.a ~= ARGV[6] then
    h.c = h.c + 1
    h.a = ARGV[6]
    redis.call('HSET', LOCK, 'o:' .. owner, cjson.encode(h))
  end
  deadline = sh_hold_deadline(h.c, owner, deadline)
  redis.call('ZADD', H, sh_int(deadline), owner)
  sh_remove(waiter)
  sh_keep(now, lk[4], math.max(deadline, sh_expire(now)), false)
  return {1, h.t, h.c}
end
local head = sh_head()
if (not head or head == waiter) and weight <= l - used then
  local token = sh_mint(ARGV[12], now)
  if not token then -- a high-water past 2^53-1: refused, nothing changed
    if not lk[1] then
      redis.call('HDEL', LOCK, 'k', 'l')
    end
    return redis.error_reply('DISTLOCK fence exhausted')
  end
  local taken = sh_taken(waiter)
  sh_remove(waiter)
  redis.call('ZADD', H, sh_int(deadline), owner)
  redis.call('HSET', LOCK, 'o:' .. owner, cjson.encode({w = weight, c = 1, t = token, m = ARGV[5], a = ARGV[6], q = taken}), 'u', sh_int(used + weight))
  if sh_queued then
    sh_wake(l, used + weight) -- the next head, if it fits too
  end
  sh_keep(now, lk[4], math.max(deadline, sh_expire(now)), used == 0)
  return {1, token, 1}
end
local holder, left, reserved = '', 250000, 0 -- engine.ReserveTTL
local first = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
if first[1] then
  holder, left = first[1], tonumber(first[2]) - now
end
if not first[1] or weight <= l - used then
  holder, reserved = '', 1
end
if waiter == '' then
  sh_keep(now, lk[4], sh_expire(now), false)
  return {0, holder, left, 0, 0, reserved}
end
sh_enqueue(waiter, ARGV[8], weight, now, ARGV[13])
sh_wake(l, used) -- the head may fit (a head that died)
sh_keep(now, lk[4], sh_expire(now), false)
return {0, holder, left, 1, sh_head() == waiter and 1 or 0, reserved}
