-- While ARGV[1] holds the lock KEYS[1], raises the fencing high-water KEYS[2]
-- to at least ARGV[2] (refreshing its time to live to ARGV[3] ms) and records
-- ARGV[2] as the token of the grant. Returns 1 when ARGV[1] held the lock, 0
-- otherwise. Tokens are compared as numbers (exact below 2^53).
local v = redis.call('GET', KEYS[1])
if not v then
  return 0
end
local s = decode(v)
if s.o ~= ARGV[1] then
  return 0
end
local hw = redis.call('GET', KEYS[2])
if (not hw) or tonumber(hw) < tonumber(ARGV[2]) then
  hw = ARGV[2]
end
redis.call('SET', KEYS[2], hw, 'PX', ARGV[3])
s.t = ARGV[2]
redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
return 1
