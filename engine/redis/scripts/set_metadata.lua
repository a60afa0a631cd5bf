-- Sets the metadata of the lock KEYS[1] to ARGV[2] while ARGV[1] holds it,
-- keeping its ttl, token and holds (an election's Proclaim); marks it so
-- that its release publishes a wake-up, and publishes a message on the
-- channel KEYS[1] (command ARGV[3]: PUBLISH or SPUBLISH) for observers:
-- 'L <token> <pttl ms> <value>' (acquire.lua's message for an announced grant).
-- ARGV[4], when given and not empty, is the token of the grant whose holder
-- sets it (engine.MetadataRequest.Token, an election's term): a hold of
-- ARGV[1] under another token (a newer grant of the owner: the caller was
-- deposed) is not changed, and the answer is -1, as extend.lua answers.
-- Returns 1 when set, 0 when nobody holds it, -1 when another owner does,
-- ARGV[1] holds it under another token, or a force-release took it from
-- ARGV[1] (its mark in KEYS[2], taken.lua: until its lease would have
-- ended), as extend.lua answers.
local v = redis.call('GET', KEYS[1])
if not v then
  if tk_told(KEYS[2], ARGV[1]) then
    return -1
  end
  return 0
end
local s = decode(v)
if s.o ~= ARGV[1] then
  return -1
end
if ARGV[4] and ARGV[4] ~= '' and ARGV[4] ~= s.t then
  return -1
end
s.m = ARGV[2]
s.w = true
redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
redis.call(ARGV[3], KEYS[1], 'L ' .. s.t .. ' ' .. redis.call('PTTL', KEYS[1]) .. ' ' .. ARGV[2])
return 1
