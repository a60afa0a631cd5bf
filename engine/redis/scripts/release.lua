-- Drops one hold of ARGV[1] on the lock KEYS[1]; frees it when the last
-- hold goes, and then publishes a wake-up on the channel KEYS[1] (with
-- command ARGV[2]: PUBLISH or SPUBLISH) if a waiter marked the lock.
-- ARGV[3] identifies the release call: a request whose id is the one
-- recorded is a resent copy of a release already applied (a client library
-- resends a command whose reply was lost), and does not drop a second hold.
-- Returns {1, remaining holds}, {0} when nobody holds it, {-1} when another
-- owner does.
local state = redis.call('HMGET', KEYS[1], 'owner', 'count', 'release', 'waiters')
if not state[1] then
  return {0}
end
if state[1] ~= ARGV[1] then
  return {-1}
end
local count = tonumber(state[2])
if state[3] == ARGV[3] then
  return {1, count}
end
count = count - 1
if count > 0 then
  redis.call('HSET', KEYS[1], 'count', count, 'release', ARGV[3])
  return {1, count}
end
redis.call('DEL', KEYS[1])
if state[4] then
  redis.call(ARGV[2], KEYS[1], 'released')
end
return {1, 0}
