-- Drops one hold of owner ARGV[3] on the shared lock (shared.lua); ARGV[4]
-- is the release's id: a release whose id is the one recorded is a copy
-- of one already applied (a client library resent it), and drops nothing.
-- When the owner's last hold goes, its permits come back and the head of
-- the queue is woken if its weight fits; otherwise, when nobody queues,
-- everyone on the channel ('released'), else only the subscribers outside
-- the queue ('w:', addressed to no waiter).
-- Returns the holds left (0: released), -1 when the owner holds none.
local now = sh_now()
sh_purge(now)
local owner = ARGV[3]
local v = redis.call('HGET', HD, 'o:' .. owner)
if not v then
  sh_expire(now)
  return -1
end
local h = cjson.decode(v)
if h.r == ARGV[4] then
  return h.c
end
if h.c > 1 then
  h.c = h.c - 1
  h.r = ARGV[4]
  redis.call('HSET', HD, 'o:' .. owner, cjson.encode(h))
  return h.c
end
sh_drop(owner, h)
if not sh_queued then
  redis.call(PUB, MUTEX, 'released')
elseif not sh_wake(tonumber(redis.call('HGET', LOCK, 'l'))) then
  redis.call(PUB, MUTEX, redis.call('EXISTS', SQ) == 1 and 'w:' or 'released')
end
sh_expire(now)
return 0
