-- Frees every holder of the shared lock (shared.lua), whoever it is: its
-- permits come back, and it is remembered as taken over ('t:<owner>' in
-- the lock's hash = its lease deadline, µs) so that its next renewal
-- answers {-1} (shared_extend.lua) rather than {0}. The head of the queue
-- is woken if its weight fits. Returns the number of holders freed.
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'l', 'u')
local used = sh_purge(now, tonumber(lk[2] or '0'), false)
local hs = redis.call('ZRANGE', H, 0, -1, 'WITHSCORES')
local n = 0
for i = 1, #hs, 2 do
  local v = redis.call('HGET', LOCK, 'o:' .. hs[i])
  if v then
    used = sh_drop(hs[i], cjson.decode(v), used)
    redis.call('HSET', LOCK, 't:' .. hs[i], hs[i + 1])
    n = n + 1
  else
    redis.call('ZREM', H, hs[i])
  end
end
sh_wake(tonumber(lk[1]), used)
sh_expire()
return n
