-- Frees the lock KEYS[1] whoever holds it, or, when ARGV[2] is not '',
-- only when owner ARGV[2] holds it, and wakes its waiters: the head of its
-- queue (KEYS[2..4], queue.lua) if any, and a wake-up for everyone on the
-- channel KEYS[1] with command ARGV[1] (PUBLISH or SPUBLISH) when nobody
-- queues. The holder is marked taken over in KEYS[5] (taken.lua) until its
-- lease would have ended. A value at the lock's place that is no distlock
-- lock (a leaked key) is deleted all the same. Returns 1 when it was held
-- (by ARGV[2]), 0 otherwise.
local owner, deadline, token
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  local ok, s = pcall(decode, redis.call('GET', KEYS[1]))
  if ok then
    owner = s.o
    token = s.t
    local left = redis.call('PTTL', KEYS[1])
    if left > 0 then
      deadline = tk_now() + left * 1000
    end
  end
end
if ARGV[2] ~= '' and owner ~= ARGV[2] then
  return 0
end
local held = redis.call('DEL', KEYS[1])
if owner and deadline then
  tk_mark(KEYS[5], owner, deadline, tk_now())
end
q_freed(ARGV[1], held == 1 and token or nil)
return held
