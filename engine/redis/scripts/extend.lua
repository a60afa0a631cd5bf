-- Sets the time to live of the lock KEYS[1] to ARGV[2] ms if ARGV[1] holds it;
-- while ARGV[1] holds it more than once, only when that is later than its
-- expiry now (engine.HoldExpiry: no hold's lease outlives the lock).
-- ARGV[3], when given and not empty, is the token of the grant renewed
-- (engine.ExtendRequest.Token): a hold of ARGV[1] under another token (a
-- newer grant of the owner) is not extended, and the answer is {-1, its
-- token}.
-- Returns {1, token} when extended, {0} when nobody holds it, {-1} when
-- another owner does or a force-release took it from ARGV[1] (its mark in
-- KEYS[2], taken.lua: until its lease would have ended).
local v = redis.call('GET', KEYS[1])
local s = v and decode(v)
if s and s.o == ARGV[1] and ARGV[3] and ARGV[3] ~= '' and ARGV[3] ~= s.t then
  return {-1, s.t}
end
if s and s.o == ARGV[1] then
  if s.c > 1 and redis.call('PTTL', KEYS[1]) > tonumber(ARGV[2]) then
    return {1, s.t}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, s.t}
end
if tk_told(KEYS[2], ARGV[1]) or s then
  return {-1}
end
return {0}
