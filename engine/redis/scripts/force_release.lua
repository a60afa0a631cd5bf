-- Frees the lock KEYS[1] whoever holds it and wakes its waiters: the head
-- of its queue (KEYS[2..4], queue.lua) if any, and a wake-up for everyone
-- on the channel KEYS[1] with command ARGV[1] (PUBLISH or SPUBLISH) when
-- nobody queues. Returns 1 when it was held, 0 otherwise.
local held = redis.call('DEL', KEYS[1])
q_freed(ARGV[1])
return held
