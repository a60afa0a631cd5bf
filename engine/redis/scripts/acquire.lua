-- Grants the lock KEYS[1] to ARGV[1] for ARGV[2] ms, or re-enters it.
-- KEYS[1]: lock hash (owner, count, token, and when they differ from the
-- defaults: meta, attempt, waiters); KEYS[2]: fencing high-water.
-- ARGV: owner, ttl ms, metadata, high-water ttl ms, attempt id, waiting
-- ('1' when the caller waits for a wake-up if the lock is held).
-- A request whose attempt id is the one recorded (no attempt field: the
-- owner) is a retry of a request already applied: it does not count up
-- again.
-- Returns {1, token, count} when granted, {0, holder, pttl} when held by
-- another; a refused waiting caller marks the lock so that its release
-- publishes a wake-up.
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then
  if owner ~= ARGV[1] then
    if ARGV[6] == '1' then
      redis.call('HSET', KEYS[1], 'waiters', '1')
    end
    return {0, owner, redis.call('PTTL', KEYS[1])}
  end
  local state = redis.call('HMGET', KEYS[1], 'attempt', 'count', 'token')
  local count = tonumber(state[2])
  if (state[1] or owner) ~= ARGV[5] then
    count = count + 1
    redis.call('HSET', KEYS[1], 'attempt', ARGV[5], 'count', count)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, state[3], count}
end
-- token = high-water + 1. Without a high-water (first grant, FLUSHALL, a
-- restart without persistence, or its ttl ran out) the token is seeded from
-- the server clock in microseconds. Every grant takes longer than a
-- microsecond, so tokens never run ahead of the clock that seeded them, and
-- a later seed is above them all unless the clock was set back.
local token = redis.call('INCR', KEYS[2])
if token == 1 then
  local t = redis.call('TIME')
  token = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[4])
end
token = string.format('%d', token) -- exact: Lua's own rendering is %.14g
if ARGV[3] == '' and ARGV[5] == ARGV[1] then
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'count', '1', 'token', token)
else
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'count', '1', 'token', token, 'meta', ARGV[3], 'attempt', ARGV[5])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, token, 1}
