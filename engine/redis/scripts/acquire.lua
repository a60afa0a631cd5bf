-- Grants the lock KEYS[1] to ARGV[1] for ARGV[2] ms, or re-enters it.
-- KEYS[1]: lock hash (owner, count, token, meta, attempt); KEYS[2]: fencing
-- high-water.
-- ARGV: owner, ttl ms, metadata, high-water ttl ms, attempt id.
-- A request whose attempt id is the one recorded is a retry of a request
-- already applied: it does not count up again.
-- Returns {1, token, count} when granted, {0, holder, pttl} when held by another.
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then
  if owner ~= ARGV[1] then
    return {0, owner, redis.call('PTTL', KEYS[1])}
  end
  local state = redis.call('HMGET', KEYS[1], 'attempt', 'count', 'token')
  local count = tonumber(state[2])
  if state[1] ~= ARGV[5] then
    count = count + 1
    redis.call('HSET', KEYS[1], 'attempt', ARGV[5], 'count', count)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, state[3], count}
end
-- token = max(high-water + 1, server time in microseconds). The common case
-- (time is ahead of the high-water) costs one write that also reads the old
-- high-water; a clock behind the high-water costs a second write.
local t = redis.call('TIME')
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
local hw = redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[4], 'GET')
if hw and tonumber(hw) >= token then
  token = tonumber(hw) + 1
  redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[4])
end
token = string.format('%d', token)
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'count', '1', 'token', token, 'meta', ARGV[3], 'attempt', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, token, 1}
