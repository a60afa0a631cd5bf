-- The holders a force-release freed, of either kind: one HASH per name,
-- distlock:{NAME}:t, owner -> the end its lease would have had (server
-- time, µs). Until then, a renewal of that owner that does not find its
-- hold is answered taken over (HeldByOther): the mark stays, so that a
-- renewal resent after a lost reply is answered the same. Every mark is
-- pruned when a force-release writes the next, and the key expires with
-- the latest end it holds, so no mark outlives its lease (a freed holder
-- that never renews leaves nothing behind).

local function tk_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- tk_mark marks owner freed until deadline (µs) in key, at now.
local function tk_mark(key, owner, deadline, now)
  local top = deadline
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local ends = tonumber(all[i + 1])
    if all[i] ~= owner and ends and ends > now then
      top = math.max(top, ends)
    elseif all[i] ~= owner then
      redis.call('HDEL', key, all[i])
    end
  end
  if deadline <= now then
    redis.call('HDEL', key, owner)
  else
    redis.call('HSET', key, owner, string.format('%d', deadline))
  end
  if top > now then
    redis.call('PEXPIREAT', key, string.format('%d', math.ceil(top / 1000)))
  end
end

-- tk_told reports whether owner's mark in key is there and its end not
-- passed.
local function tk_told(key, owner)
  local ends = redis.call('HGET', key, owner)
  return ends ~= false and tonumber(ends) > tk_now()
end
