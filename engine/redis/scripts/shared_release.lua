-- Drops one hold of owner ARGV[3] on the shared lock (shared.lua); ARGV[4]
-- is the release's id: a release whose id is one of those recorded
-- (releaseids.lua) is a copy of one already applied (a client library
-- resent it), and drops nothing.
-- ARGV[5] = '1' undoes a grant (engine.ReleaseRequest.Undo): when the
-- owner's last hold goes and leaves no holder and nobody queued, the
-- lock's kind and limit go with it, as if the grant had not been made;
-- and a grant that took a waiter out of the queue puts the waiter back in
-- its place (sh_requeue).
-- When the owner's last hold goes, its permits come back and the head of
-- the queue is woken if its weight fits. As the mutex's release of a lock
-- nobody waited for, it publishes nothing else: every waiter is in the
-- queue.
-- ARGV[6], when given and not empty, is the token of the grant released
-- (engine.ReleaseRequest.Token): a hold of the owner under another token
-- (a newer grant) is not dropped, and the answer is -2.
-- ARGV[7], when given and not empty, is the kind the release is for (1
-- semaphore, 2 rwlock): a hold of the other kind is not dropped, and the
-- answer is the error 'DISTLOCK kind <the lock's kind>', as an acquire's.
-- Returns the holds left (0: released), -1 when the owner holds none, -2
-- when it holds a newer grant.
local now = sh_now()
local owner = ARGV[3]
local lk = redis.call('HMGET', LOCK, 'l', 'u', 'o:' .. owner, 'k')
local used = sh_purge(now, tonumber(lk[2] or '0'), false)
local v = not sh_dropped[owner] and lk[3]
if not v then
  sh_expire(now)
  return -1
end
if ARGV[7] and ARGV[7] ~= '' and lk[4] and lk[4] ~= ARGV[7] then
  sh_expire(now)
  return redis.error_reply('DISTLOCK kind ' .. lk[4])
end
local h = cjson.decode(v)
if ARGV[6] and ARGV[6] ~= '' and tonumber(ARGV[6]) ~= tonumber(h.t) then
  sh_expire(now)
  return -2
end
-- #releaseids.lua
if released(h, ARGV[4]) then
  return h.c
end
if h.c > 1 then
  h.c = h.c - 1
  noteRelease(h, ARGV[4])
  redis.call('HSET', LOCK, 'o:' .. owner, cjson.encode(h))
  return h.c
end
used = sh_drop(owner, h, used)
if ARGV[5] == '1' and h.q then
  sh_requeue(h.q, now)
end
if ARGV[5] == '1' and used == 0 and not sh_head() then
  redis.call('DEL', LOCK, H)
  sh_expire(now)
  return 0
end
sh_wake(tonumber(lk[1]), used)
sh_expire(now)
return 0
