-- Renews a holder's lease or a waiter's heartbeat on the shared lock
-- (shared.lua): ARGV[3] the owner (or waiter id), ARGV[4] the ttl in ms,
-- ARGV[5] '1' for a waiter. Returns, for a holder, {1, token} when it
-- holds the lock (its deadline is now ttl from now), {0} when it does not;
-- for a waiter, {1, wake} while it is queued, wake = 1 when it heads the
-- queue and its weight fits, {0} when it is not queued.
local now = sh_now()
sh_purge(now)
local id, deadline = ARGV[3], sh_int(now + tonumber(ARGV[4]) * 1000)
if ARGV[5] == '1' then
  if not redis.call('ZSCORE', SQ, id) then
    sh_expire(now)
    return {0}
  end
  redis.call('ZADD', SQD, deadline, id)
  local h, w = sh_head()
  local l = tonumber(redis.call('HGET', LOCK, 'l'))
  local wake = h == id and l and w <= l - sh_used()
  sh_expire(now)
  return {1, wake and 1 or 0}
end
local v = redis.call('HGET', HD, 'o:' .. id)
if not v then
  sh_expire(now)
  return {0}
end
redis.call('ZADD', H, deadline, id)
sh_expire(now)
return {1, cjson.decode(v).t}
