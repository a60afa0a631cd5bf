-- Sets the time to live of the lock KEYS[1] to ARGV[2] ms if ARGV[1] holds it.
-- Returns {1, token} when extended, {0} when nobody holds it, {-1} when
-- another owner does.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return {0}
end
if owner ~= ARGV[1] then
  return {-1}
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, redis.call('HGET', KEYS[1], 'token')}
