-- While ARGV[3] holds permits of the shared lock (shared.lua), raises the
-- fencing high-water to at least ARGV[4] (its ttl set to the fence ttl)
-- and records ARGV[4] as the holder's token. Returns 1 when ARGV[3] held
-- permits, 0 otherwise. Refused as raise_fence.lua refuses (ARGV[5]: how
-- far ahead of the clock, in µs): 'DISTLOCK below <token>' or 'DISTLOCK
-- ahead <limit>', having changed nothing.
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'u', 'o:' .. ARGV[3])
sh_purge(now, tonumber(lk[1] or '0'), false)
local v = not sh_dropped[ARGV[3]] and lk[2]
if not v then
  sh_expire(now)
  return 0
end
local h = cjson.decode(v)
local want, cur = tonumber(ARGV[4]), tonumber(h.t)
if want < cur then
  sh_expire(now)
  return redis.error_reply('DISTLOCK below ' .. h.t)
end
if want > cur and want > now + tonumber(ARGV[5]) then
  sh_expire(now)
  return redis.error_reply('DISTLOCK ahead ' .. sh_int(now + tonumber(ARGV[5])))
end
local hw = redis.call('GET', FENCE)
if (not hw) or tonumber(hw) < want then
  hw = ARGV[4]
end
redis.call('SET', FENCE, hw, 'PX', FENCE_MS)
h.t = ARGV[4]
redis.call('HSET', LOCK, 'o:' .. ARGV[3], cjson.encode(h))
sh_expire(now)
return 1
