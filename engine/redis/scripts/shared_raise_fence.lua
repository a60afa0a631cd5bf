-- While ARGV[3] holds permits of the shared lock (shared.lua), raises the
-- fencing high-water to at least ARGV[4] (its ttl set to the fence ttl)
-- and records ARGV[4] as the holder's token. Returns 1 when ARGV[3] held
-- permits, 0 otherwise. Tokens are compared as numbers (exact below 2^53).
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'u', 'o:' .. ARGV[3])
sh_purge(now, tonumber(lk[1] or '0'), false)
local v = not sh_dropped[ARGV[3]] and lk[2]
if not v then
  sh_expire()
  return 0
end
local hw = redis.call('GET', FENCE)
if (not hw) or tonumber(hw) < tonumber(ARGV[4]) then
  hw = ARGV[4]
end
redis.call('SET', FENCE, hw, 'PX', FENCE_MS)
local h = cjson.decode(v)
h.t = ARGV[4]
redis.call('HSET', LOCK, 'o:' .. ARGV[3], cjson.encode(h))
sh_expire()
return 1
