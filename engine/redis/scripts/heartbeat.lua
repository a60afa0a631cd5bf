-- A waiter's heartbeat: sets the deadline of waiter ARGV[1] in the queue
-- of the lock KEYS[1] (KEYS[2..4], queue.lua) to ARGV[2] ms from now.
-- Returns {1, wake} while it is queued, wake = 1 when it heads the queue of
-- a free lock (not reserved for another); {0} when it is not in the queue.
-- When the lock is free and unreserved, the head is woken (and the lock
-- reserved for it) if it is due: so a lapsed reservation's successor is
-- served even if nobody else touches the lock, and a head whose wake-up
-- reached nobody (queue.lua's q_reserved) learns that its turn came.
-- A heartbeat leaves the channel of the waiter's wake-ups as its attempts
-- recorded it (queue.lua's q_follow): a remote waiter's heartbeats go
-- through whichever of its servers answers, while its event stream, where
-- the wake-up must go, may stay on another.
local now = q_now()
q_settle(now)
if not redis.call('ZSCORE', Q, ARGV[1]) then
  return {0}
end
q_touch(ARGV[1], ARGV[2], now)
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {1, 0}
end
q_wake(now, false)
local rv = q_res()
if q_head() == ARGV[1] and (not rv or rv == ARGV[1]) then
  return {1, 1}
end
return {1, 0}
