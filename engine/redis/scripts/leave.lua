-- Takes waiter ARGV[1] out of the queue of the lock KEYS[1] (KEYS[2..4],
-- queue.lua). When it was the head (or the lock was reserved for it) and
-- the lock is free, the next head is woken. Returns 1 when it was queued.
local now = q_now()
q_settle(now)
if not redis.call('ZSCORE', Q, ARGV[1]) then
  return 0
end
local head = q_head() == ARGV[1]
q_remove(ARGV[1])
if head and redis.call('EXISTS', KEYS[1]) == 0 then
  q_wake(now, true)
end
return 1
