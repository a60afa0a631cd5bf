-- Frees every holder of the shared lock (shared.lua), whoever it is, or,
-- when ARGV[3] is not '', only the holder ARGV[3]: its permits come back,
-- and it is marked taken over in KEYS[8] (taken.lua) until its lease
-- would have ended, so that its next renewal answers {-1}
-- (shared_extend.lua) rather than {0}. The head of the queue is woken if
-- its weight fits. Returns the number of holders freed.
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'l', 'u')
local used = sh_purge(now, tonumber(lk[2] or '0'), false)
local hs
if ARGV[3] == '' then
  hs = redis.call('ZRANGE', H, 0, -1, 'WITHSCORES')
else
  local d = redis.call('ZSCORE', H, ARGV[3])
  hs = d and {ARGV[3], d} or {}
end
local n = 0
for i = 1, #hs, 2 do
  local v = redis.call('HGET', LOCK, 'o:' .. hs[i])
  if v then
    used = sh_drop(hs[i], cjson.decode(v), used)
    tk_mark(KEYS[8], hs[i], tonumber(hs[i + 1]), now)
    n = n + 1
  else
    redis.call('ZREM', H, hs[i])
  end
end
if n > 0 then
  sh_wake(tonumber(lk[1]), used)
end
sh_expire(now)
return n
