-- Sets the time to live of the lock KEYS[1] to ARGV[2] ms if ARGV[1] holds it.
-- Returns {1, token} when extended, {0} when nobody holds it, {-1} when
-- another owner does.
local state = redis.call('HMGET', KEYS[1], 'owner', 'token')
if not state[1] then
  return {0}
end
if state[1] ~= ARGV[1] then
  return {-1}
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, state[2]}
