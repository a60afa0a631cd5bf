-- Drops one hold of ARGV[1] on the lock KEYS[1]; frees it when the last
-- hold goes, and then, if a waiter marked the lock, wakes the head of its
-- queue (KEYS[2..4], queue.lua), or publishes a wake-up for everyone on the
-- channel KEYS[1] (with command ARGV[2]: PUBLISH or SPUBLISH) when nobody
-- queues (waiters that wait outside a queue).
-- ARGV[3] identifies the release call: a request whose id is one of those
-- recorded (releaseids.lua) is a resent copy of a release already applied
-- (a client library resends a command whose reply was lost), and does not
-- drop a second hold.
-- ARGV[4], when given and not empty, is the token of the grant released
-- (engine.ReleaseRequest.Token): a hold of ARGV[1] under another token (a
-- newer grant of the owner) is not dropped, and the answer is -2.
-- ARGV[5] = '1' undoes a grant (engine.ReleaseRequest.Undo): when the
-- last hold goes and the grant took a waiter out of the queue (the value's
-- q), the waiter is put back in its place (queue.lua's q_requeue) before
-- the head is woken.
-- Returns the holds left (0: freed), -1 when nobody holds it, -2 when
-- another owner does.
-- The queue's keys may be left out (KEYS[1] alone): freeing a marked lock
-- then answers -3, having changed nothing, and the caller sends the
-- release again with every key.
-- The lock's functions (lock.lua) are defined (their closures built, on
-- every run) only for a lock that is held, and the queue's (queue.lua)
-- only when a marked lock is freed.
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
-- #lock.lua
local marked, token, taken
local p = shortForm(v)
if p then -- one hold: the common case, without decoding
  token = string.sub(v, 1, p - 1)
  if string.sub(v, p + 1) ~= ARGV[1] or (ARGV[4] and ARGV[4] ~= '' and ARGV[4] ~= token) then
    return -2
  end
  marked = string.byte(v, p) == 42
else
  local s = decode(v)
  if s.o ~= ARGV[1] or (ARGV[4] and ARGV[4] ~= '' and ARGV[4] ~= s.t) then
    return -2
  end
  -- #releaseids.lua
  if released(s, ARGV[3]) then
    return s.c
  end
  if s.c > 1 then
    s.c = s.c - 1
    noteRelease(s, ARGV[3])
    redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
    return s.c
  end
  marked = s.w
  token = s.t
  if ARGV[5] == '1' then
    taken = s.q
  end
end
if (marked or taken) and #KEYS < 4 then
  return -3 -- the wake-up needs the queue: send every key
end
redis.call('DEL', KEYS[1])
if marked or taken then
  -- #queue.lua
  if taken then
    q_requeue(taken, q_now())
  end
  q_freed(ARGV[2], token)
end
return 0
