-- Renews a holder's lease or a waiter's heartbeat on the shared lock
-- (shared.lua): ARGV[3] the owner (or waiter id), ARGV[4] the ttl in ms,
-- ARGV[5] '1' for a waiter; ARGV[6], when given and not empty, the token of
-- the holder's grant (engine.ExtendRequest.Token): a hold under another
-- token (a newer grant of the owner) is not renewed, and the answer is
-- {-1, its token}. Returns, for a holder, {1, token} when it
-- holds the lock (its deadline is now ttl from now; only later while it
-- holds it more than once: sh_hold_deadline), {-1} when a
-- force-release took it (KEYS[8]), {0} when it does not hold it otherwise;
-- for a waiter, {1, wake} while it is queued, wake = 1 when it heads the
-- queue and has an attempt to make (sh_due), {0} when it is not queued.
local now = sh_now()
local id, deadline = ARGV[3], now + tonumber(ARGV[4]) * 1000
local lk = redis.call('HMGET', LOCK, 'l', 'u', 'x', 'o:' .. id)
local used = sh_purge(now, tonumber(lk[2] or '0'), false)
if ARGV[5] == '1' then
  if not (sh_queued and redis.call('ZSCORE', SQ, id)) then
    sh_expire(now)
    return {0}
  end
  redis.call('ZADD', SQD, sh_int(deadline), id)
  local h, w = sh_head()
  local l = tonumber(lk[1])
  local wake = h == id and sh_due(w, l, used)
  sh_keep(now, lk[3], sh_expire(now), false)
  return {1, wake and 1 or 0}
end
local v = not sh_dropped[id] and lk[4]
if not v then
  -- A holder a force-release freed (shared_force_release.lua) is told
  -- {-1}, taken over, until its lease would have ended (its mark in
  -- KEYS[8], taken.lua).
  sh_expire(now)
  return tk_told(KEYS[8], id) and {-1} or {0}
end
local h = cjson.decode(v)
if ARGV[6] and ARGV[6] ~= '' and tonumber(ARGV[6]) ~= tonumber(h.t) then
  sh_expire(now)
  return {-1, h.t}
end
deadline = sh_hold_deadline(h.c, id, deadline)
redis.call('ZADD', H, sh_int(deadline), id)
sh_keep(now, lk[3], math.max(deadline, sh_expire(now)), false)
return {1, h.t}
