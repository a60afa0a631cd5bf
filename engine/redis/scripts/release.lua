-- Drops one hold of ARGV[1] on the lock KEYS[1]; frees it and publishes a
-- wake-up on channel ARGV[2] (with command ARGV[3]: PUBLISH or SPUBLISH) when
-- the last hold goes.
-- Returns {1, remaining holds}, {0} when nobody holds it, {-1} when another
-- owner does.
local state = redis.call('HMGET', KEYS[1], 'owner', 'count')
if not state[1] then
  return {0}
end
if state[1] ~= ARGV[1] then
  return {-1}
end
local count = tonumber(state[2]) - 1
if count > 0 then
  redis.call('HSET', KEYS[1], 'count', count)
  return {1, count}
end
redis.call('DEL', KEYS[1])
redis.call(ARGV[3], ARGV[2], 'released')
return {1, 0}
