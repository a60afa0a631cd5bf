-- Sets the limit of the semaphore (shared.lua) to ARGV[3], making it when
-- it does not exist. Holders above a smaller limit keep their permits; the
-- head of the queue is woken if it fits under the new one, or if it asks
-- for more than the new limit (its attempt is then refused: sh_due). Refused, having
-- changed nothing, with 'DISTLOCK mutex' (the name is held as a mutex, or
-- live waiters queue for its mutex: sh_mutex_queued) or 'DISTLOCK kind <k>'
-- (a lock of another kind). Returns the previous limit (0 for a new
-- semaphore).
-- KEYS: shared.lua's seven, then the mutex's queue's heartbeat deadlines
-- and state (as shared_acquire.lua).
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'k', 'l', 'u', 'x')
local used, mutex = sh_purge(now, tonumber(lk[3] or '0'), true)
if mutex or sh_mutex_queued(now, KEYS[8], KEYS[9]) then
  return redis.error_reply('DISTLOCK mutex')
end
local k = tonumber(lk[1])
if k and k ~= 1 then
  return redis.error_reply('DISTLOCK kind ' .. k)
end
redis.call('HSET', LOCK, 'k', '1', 'l', ARGV[3])
if k then
  sh_wake(tonumber(ARGV[3]), used)
end
sh_keep(now, lk[4], sh_expire(now), false)
return tonumber(lk[2] or '0')
