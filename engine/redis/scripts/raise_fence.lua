-- While ARGV[1] holds the lock KEYS[1], raises the fencing high-water KEYS[2]
-- to at least ARGV[2] (refreshing its time to live to ARGV[3] ms) and records
-- ARGV[2] as the token of the grant. Returns 1 when ARGV[1] held the lock, 0
-- otherwise. Within engine.CheckRaise (the Go side has refused a token above
-- 2^53-1, so tokens compare exactly as numbers): a token below the grant's
-- is refused with the error reply 'DISTLOCK below <token>', one more than
-- ARGV[4] µs ahead of the server's clock with 'DISTLOCK ahead <limit>';
-- a refusal changes nothing.
local v = redis.call('GET', KEYS[1])
if not v then
  return 0
end
local s = decode(v)
if s.o ~= ARGV[1] then
  return 0
end
local want, cur = tonumber(ARGV[2]), tonumber(s.t)
if want < cur then
  return redis.error_reply('DISTLOCK below ' .. s.t)
end
if want > cur then
  local t = redis.call('TIME')
  local limit = tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[4])
  if want > limit then
    return redis.error_reply('DISTLOCK ahead ' .. string.format('%d', limit))
  end
end
local hw = redis.call('GET', KEYS[2])
if (not hw) or tonumber(hw) < want then
  hw = ARGV[2]
end
redis.call('SET', KEYS[2], hw, 'PX', ARGV[3])
s.t = ARGV[2]
redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
return 1
