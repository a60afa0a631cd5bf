-- Describes the shared lock (shared.lua): {kind (0 when it does not
-- exist), limit, the fencing high-water ('' when there is none), the
-- waiters queued, then the first ARGV[3] of them in arrival order (a count
-- n and n pairs: id, µs in the queue, -1 when not recorded), and for each
-- holder its owner, its time left in µs and its details (JSON)}.
local now = sh_now()
local lk = redis.call('HMGET', LOCK, 'k', 'l', 'u', 'x')
sh_purge(now, tonumber(lk[3] or '0'), false)
local out = {tonumber(lk[1] or '0'), tonumber(lk[2] or '0'), redis.call('GET', FENCE) or '',
  sh_queued and redis.call('ZCARD', SQ) or 0}
local q = sh_queued and redis.call('ZRANGE', SQ, 0, tonumber(ARGV[3]) - 1) or {}
out[#out + 1] = #q
for _, id in ipairs(q) do
  local t = redis.call('HGET', SQS, 't:' .. id)
  out[#out + 1] = id
  out[#out + 1] = t and now - tonumber(t) or -1
end
local hs = redis.call('ZRANGE', H, 0, -1, 'WITHSCORES')
for i = 1, #hs, 2 do
  local v = redis.call('HGET', LOCK, 'o:' .. hs[i])
  if v then
    out[#out + 1] = hs[i]
    out[#out + 1] = tonumber(hs[i + 1]) - now
    out[#out + 1] = v
  end
end
if lk[1] then
  sh_keep(now, lk[4], sh_expire(now), false)
end
return out
