-- Grants the lock KEYS[1] to ARGV[1] for ARGV[2] ms, or re-enters it.
-- KEYS[2..4]: the waiter queue (queue.lua); KEYS[5], KEYS[6], KEYS[7]: the
-- name's shared lock, its holders and its waiters' heartbeat deadlines
-- (shared.lua's KEYS[2], KEYS[3] and KEYS[5]); KEYS[8]: fencing high-water.
-- A request outside the queue (no waiter id, not behind) may send the
-- lock, the queue, the shared lock's three keys and the high-water alone
-- (KEYS[1], KEYS[2], KEYS[5..8] as its KEYS[1..6]): where it would need
-- the rest of the queue (a free lock while waiters queue) it answers 2 (an
-- integer), having changed nothing, and the caller sends it again with
-- every key.
-- A name with live shared holders (a semaphore's permits or a
-- reader-writer lock's readers or writer held) or live waiters in the
-- shared lock's queue (queued waiters bind the name to their kind, as
-- holders do) is refused with the error reply 'DISTLOCK kind <k>' (k: the
-- shared lock's kind, as shared_acquire.lua refuses another kind), having
-- changed nothing.
-- ARGV: owner, ttl ms, metadata, high-water ttl ms, attempt id, waiting
-- ('1' when the caller waits for a wake-up if the lock is held; 'PUBLISH'
-- or 'SPUBLISH' when it waits and its grant is announced: an election's
-- campaign, engine.AcquireRequest.Announce: a first grant is then marked,
-- and published on the channel KEYS[1] with that command: 'L <token>
-- <ttl ms> <value>', engine/redis/notice.go, or 'announced' without a value), time floor
-- ('0' turns it off; absent or anything else: a token is never below the
-- server clock in microseconds), and for
-- a waiter of the queue (absent otherwise): waiter id, heartbeat ttl ms,
-- fair ('1'), behind ('1': do not take a free lock ahead of the queue),
-- PUBLISH or SPUBLISH, reservation µs, starvation bound µs (queue.lua),
-- no reservation ('1'), the channel of the waiter's wake-ups (its
-- engine's: a queued waiter's entry records it anew when its attempt comes
-- through another engine, queue.lua's q_follow).
-- A request whose attempt id is the one recorded (none recorded: the
-- owner) is a retry of a request already applied: it does not count up
-- again. A refused waiting caller marks the lock so that its release
-- publishes a wake-up (and a grant made while waiters queue is marked); a
-- refused waiter enters the queue. A waiter granted the lock leaves the
-- queue, and the lock's value keeps its queue entry (q), which an Undo of
-- the grant puts back (release.lua).
-- Returns the token (a string, followed by '*' when the grant is marked)
-- on a first grant, {1, token, holds} on re-entry, {0, holder, pttl} when
-- another owner holds it, and for a waiter, or for a free lock kept for
-- the queue, {0, holder, pttl, queued, head, reserved} ('' and the
-- reservation's time left for a free lock kept for the queue).
--
-- The lock's and the queue's functions (lock.lua, queue.lua) are defined
-- (their closures built, on every run) only on the paths that need them:
-- the grant of a free lock without a queue builds only mint.lua's and runs EXISTS
-- (of the lock, its queue and the shared lock's holders), the minting
-- (INCR, and TIME and SET for the time floor) and SET; a refusal of a
-- caller outside the queue and a re-entry build only the lock's.
local waiter = ARGV[8] or ''
local SH, SQD = KEYS[#KEYS - 2], KEYS[#KEYS - 1]
-- One call tells the common case: neither the lock, nor its queue, nor
-- holders or waiters of a shared lock of the name exist.
local n = redis.call('EXISTS', KEYS[1], KEYS[2], SH, SQD)
local shared = n > 0 and redis.call('EXISTS', SH, SQD) or 0
if shared > 0 then
  -- Holders and waiters whose deadline passed stay until a shared script
  -- drops them: only a live one (deadline after now, in server µs)
  -- refuses the mutex.
  local t = redis.call('TIME')
  local live = string.format('(%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
  if redis.call('ZCOUNT', SH, live, '+inf') > 0 or redis.call('ZCOUNT', SQD, live, '+inf') > 0 then
    local k = redis.call('HGET', KEYS[#KEYS - 3], 'k')
    if k then
      return redis.error_reply('DISTLOCK kind ' .. k)
    end
  end
  n = n - shared
end
local queued = false -- whether waiters queue
local taken -- the queue entry a first grant took (queue.lua's q_taken)
if n > 0 then
  local v = redis.call('GET', KEYS[1])
  queued = n == 2 or not v
  -- #lock.lua
  local s = v and decode(v)
  local other = s and s.o ~= ARGV[1] -- held by another owner
  -- The queue's paths: a waiter refused, a free lock with a queue, a
  -- waiter's re-entry while others queue (it leaves the queue).
  local queue = (other and waiter ~= '') or (queued and (not s or waiter ~= ''))
  if queue and #KEYS < 8 then
    return 2 -- sent without the queue's keys: nothing changed, send them
  end
  if other then
    if ARGV[6] ~= '' and not s.w then
      s.w = true
      redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
    end
    if waiter == '' then
      return {0, s.o, redis.call('PTTL', KEYS[1])}
    end
  end
  if queue then
    -- #queue.lua
    -- refuse answers a waiter's refusal: it enters the queue.
    local function refuse(holder, pttl, reserved, now)
      now = now or q_now()
      q_settle(now)
      q_enqueue(waiter, ARGV[9], ARGV[10] == '1', now, {ARGV[12], ARGV[13], ARGV[14]}, ARGV[15] == '1', ARGV[16])
      return {0, holder, pttl, 1, q_head() == waiter and 1 or 0, reserved}
    end
    if other then
      return refuse(s.o, redis.call('PTTL', KEYS[1]), 0)
    end
    if not s then
      local now = q_now()
      q_settle(now)
      local rv = q_res()
      local behind = false
      if not rv then
        local h = q_head()
        if h and h ~= waiter and (redis.call('HEXISTS', QS, 'f:' .. h) == 1 or
            ARGV[10] == '1' or ARGV[11] == '1') then
          -- A fair head (or a fair or polite newcomer): the lock waits for
          -- the head, which is woken (and the lock reserved when it is due).
          q_wake(now, true)
          rv = q_res()
          behind = true
        end
      end
      if behind or (rv and rv ~= waiter) then
        local left = 0
        if rv then
          local _, ru = q_res()
          left = math.floor((ru - now) / 1000)
        end
        if waiter == '' then
          return {0, '', math.max(left, 1), 0, 0, 1}
        end
        return refuse('', math.max(left, 1), 1, now)
      end
    end
    if waiter ~= '' then
      if not s then
        taken = q_taken(waiter) -- kept with the grant, which an Undo takes back
      end
      q_remove(waiter) -- granted: it leaves the queue (and its reservation)
    end
    queued = redis.call('EXISTS', Q) == 1
  end
  if s then -- re-entry
    if (s.a or s.o) ~= ARGV[5] then
      s.c = s.c + 1
      s.a = ARGV[5]
    end
    -- The owner's holds share the expiry: with more than one, it only
    -- moves later (engine.HoldExpiry), so no hold's lease outlives it.
    if s.c > 1 and redis.call('PTTL', KEYS[1]) > tonumber(ARGV[2]) then
      redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
    else
      redis.call('SET', KEYS[1], encode(s), 'PX', ARGV[2])
    end
    return {1, s.t, s.c}
  end
end
-- The token (mint.lua): refused as exhausted past 2^53-1.
local token = mint(KEYS[#KEYS], ARGV[4], ARGV[7])
if not token then
  return redis.error_reply('DISTLOCK fence exhausted')
end
-- While waiters queue, the grant is marked: its release wakes the head.
-- An announced grant is marked too: its release is published.
local announce = #ARGV[6] > 1
if announce then
  queued = true
end
local v
if ARGV[3] == '' and ARGV[5] == ARGV[1] and not taken then
  v = token .. (queued and '*' or ' ') .. ARGV[1]
else
  v = cjson.encode({o = ARGV[1], c = 1, t = token, m = ARGV[3], a = ARGV[5], w = queued or nil, q = taken})
end
redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
if announce then
  redis.call(ARGV[6], KEYS[1], ARGV[3] ~= '' and ('L ' .. token .. ' ' .. ARGV[2] .. ' ' .. ARGV[3]) or 'announced')
end
if queued then
  return token .. '*' -- marked: its release will need the queue's keys
end
return token
