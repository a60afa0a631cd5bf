-- Drops one hold of ARGV[1] on the lock KEYS[1]; frees it when the last
-- hold goes, and then, if a waiter marked the lock, wakes the head of its
-- queue (KEYS[2..4], queue.lua), or publishes a wake-up for everyone on the
-- channel KEYS[1] (with command ARGV[2]: PUBLISH or SPUBLISH) when nobody
-- queues (waiters that wait outside a queue).
-- ARGV[3] identifies the release call: a request whose id is the one
-- recorded is a resent copy of a release already applied (a client library
-- resends a command whose reply was lost), and does not drop a second hold.
-- Returns the holds left (0: freed), -1 when nobody holds it, -2 when
-- another owner does.
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
local p = shortForm(v)
if p then -- one hold: the common case, without decoding
  if string.sub(v, p + 1) ~= ARGV[1] then
    return -2
  end
  redis.call('DEL', KEYS[1])
  if string.byte(v, p) == 42 then
    q_freed(ARGV[2])
  end
  return 0
end
local s = decode(v)
if s.o ~= ARGV[1] then
  return -2
end
if s.r == ARGV[3] then
  return s.c
end
if s.c > 1 then
  s.c = s.c - 1
  s.r = ARGV[3]
  redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
  return s.c
end
redis.call('DEL', KEYS[1])
if s.w then
  q_freed(ARGV[2])
end
return 0
