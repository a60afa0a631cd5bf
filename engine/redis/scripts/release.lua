-- Drops one hold of ARGV[1] on the lock KEYS[1]; frees it and publishes a
-- wake-up on channel ARGV[2] (with command ARGV[3]: PUBLISH or SPUBLISH) when
-- the last hold goes.
-- Returns {1, remaining holds}, {0} when nobody holds it, {-1} when another
-- owner does.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return {0}
end
if owner ~= ARGV[1] then
  return {-1}
end
local count = redis.call('HINCRBY', KEYS[1], 'count', -1)
if count > 0 then
  return {1, count}
end
redis.call('DEL', KEYS[1])
redis.call(ARGV[3], ARGV[2], 'released')
return {1, 0}
