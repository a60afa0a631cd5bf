-- Takes waiter ARGV[3] out of the shared lock's queue (shared.lua), and
-- wakes the head if its weight fits. Returns 1 when it was queued.
local now = sh_now()
sh_purge(now)
local queued = redis.call('ZSCORE', SQ, ARGV[3]) and 1 or 0
sh_remove(ARGV[3])
sh_wake(tonumber(redis.call('HGET', LOCK, 'l')))
sh_expire(now)
return queued
