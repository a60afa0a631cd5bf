-- Grants the lock KEYS[1] to ARGV[1] for ARGV[2] ms, or re-enters it.
-- KEYS[2]: fencing high-water.
-- ARGV: owner, ttl ms, metadata, high-water ttl ms, attempt id, waiting
-- ('1' when the caller waits for a wake-up if the lock is held), time floor
-- ('1': a token is never below the server clock in microseconds).
-- A request whose attempt id is the one recorded (none recorded: the
-- owner) is a retry of a request already applied: it does not count up
-- again. A refused waiting caller marks the lock so that its release
-- publishes a wake-up; a refused request changes nothing else.
-- Returns the token (a string) on a first grant, {1, token, holds} on
-- re-entry, {0, holder, pttl} when another owner holds it.
local v = redis.call('GET', KEYS[1])
if not v then
  -- token = high-water + 1. Without a high-water (first grant, FLUSHALL, a
  -- restart without persistence, or its ttl ran out) the token is seeded
  -- from the server clock in microseconds. Every grant takes longer than a
  -- microsecond, so tokens never run ahead of the clock that seeded them,
  -- and a later seed is above them all unless the clock was set back.
  --
  -- With the time floor, token = max(high-water + 1, server clock in µs),
  -- which also stays above the tokens a failover to a replica lost (they
  -- were never ahead of the old master's clock).
  local token = redis.call('INCR', KEYS[2])
  if token == 1 then
    local t = redis.call('TIME')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[4])
  elseif ARGV[7] == '1' then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if now > token then
      token = now
      redis.call('SET', KEYS[2], string.format('%d', token), 'KEEPTTL')
    end
  end
  token = string.format('%d', token) -- exact: Lua's own rendering is %.14g
  if ARGV[3] == '' and ARGV[5] == ARGV[1] then
    v = token .. ' ' .. ARGV[1]
  else
    v = cjson.encode({o = ARGV[1], c = 1, t = token, m = ARGV[3], a = ARGV[5]})
  end
  redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
  return token
end
local s = decode(v)
if s.o ~= ARGV[1] then
  if ARGV[6] == '1' and not s.w then
    s.w = true
    redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
  end
  return {0, s.o, redis.call('PTTL', KEYS[1])}
end
if (s.a or s.o) ~= ARGV[5] then
  s.c = s.c + 1
  s.a = ARGV[5]
end
redis.call('SET', KEYS[1], encode(s), 'PX', ARGV[2])
return {1, s.t, s.c}
