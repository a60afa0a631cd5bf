-- Takes waiter ARGV[3] out of the shared lock's queue (shared.lua), and
-- wakes the head if its weight fits. Returns 1 when it was queued.
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'l', 'u')
local used = sh_purge(now, tonumber(lk[2] or '0'), false)
local queued = sh_queued and redis.call('ZSCORE', SQ, ARGV[3]) and 1 or 0
sh_remove(ARGV[3])
sh_wake(tonumber(lk[1]), used)
sh_expire(now)
return queued
