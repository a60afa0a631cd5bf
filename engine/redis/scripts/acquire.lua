-- Grants the lock KEYS[1] to ARGV[1] for ARGV[2] ms, or re-enters it.
-- KEYS[1]: lock hash (owner, count, token, meta); KEYS[2]: fencing high-water.
-- ARGV: owner, ttl ms, metadata, high-water ttl ms, attempt id.
-- A request whose attempt id is the one recorded is a retry of a request
-- already applied: it does not count up again.
-- Returns {1, token, count} when granted, {0, holder, pttl} when held by another.
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then
  if owner ~= ARGV[1] then
    return {0, owner, redis.call('PTTL', KEYS[1])}
  end
  local count
  if redis.call('HGET', KEYS[1], 'attempt') == ARGV[5] then
    count = tonumber(redis.call('HGET', KEYS[1], 'count'))
  else
    count = redis.call('HINCRBY', KEYS[1], 'count', 1)
    redis.call('HSET', KEYS[1], 'attempt', ARGV[5])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, redis.call('HGET', KEYS[1], 'token'), count}
end
-- token = max(high-water + 1, server time in microseconds)
local t = redis.call('TIME')
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
local hw = tonumber(redis.call('GET', KEYS[2]) or '0')
if hw + 1 > token then
  token = hw + 1
end
token = string.format('%.0f', token)
redis.call('SET', KEYS[2], token, 'PX', ARGV[4])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'count', '1', 'token', token, 'meta', ARGV[3], 'attempt', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, token, 1}
