-- requeue puts the queue entry e of a grant undone ({i: waiter id, n:
-- arrival ticket, d: heartbeat deadline in µs}) back in a waiter queue
-- (q: waiter -> arrival ticket, qd: waiter -> heartbeat deadline, qs: its
-- state, n = the last ticket) at its ticket, unless the waiter queued again
-- meanwhile at an earlier place, which it keeps; later arrivals stay
-- behind it. It returns whether it put the entry back; the caller checks
-- the deadline first and sets the entry's fields of the state after.
-- queue.lua (the mutex's queue) and shared.lua (a shared lock's) use it.
local function requeue(q, qd, qs, e)
  local was = redis.call('ZSCORE', q, e.i)
  if was and tonumber(was) <= e.n then
    return false
  end
  redis.call('ZADD', q, string.format('%d', e.n), e.i)
  local d = math.max(e.d, tonumber(redis.call('ZSCORE', qd, e.i) or '0'))
  redis.call('ZADD', qd, string.format('%d', d), e.i)
  if tonumber(redis.call('HGET', qs, 'n') or '0') < e.n then
    redis.call('HSET', qs, 'n', string.format('%d', e.n))
  end
  return true
end
