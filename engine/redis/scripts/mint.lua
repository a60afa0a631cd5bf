-- mint returns the next fencing token of the high-water key fence, as a
-- string (exact: Lua's own rendering is %.14g), or nil when it is
-- exhausted. fenceTTL is the high-water's ttl in ms; floor '0' turns the
-- time floor off ('' or absent keeps it; a positive number is a proposed
-- token, below). The acquire and multi scripts mint with it.
--
-- token = max(high-water + 1, server clock in µs): the time floor. Tokens
-- never run ahead of the clock of the server that minted them (every grant
-- takes longer than a microsecond; a proposed token, below, by at most
-- 1 s), so a token stays above the ones a failover to a replica lost, or a
-- restart from a lagging file, as long as the new master's clock is not
-- behind the old one's by more than the time between the grants (less
-- that lead).
-- With the floor off, token = high-water + 1, seeded from the clock only
-- when there is no high-water (first grant, FLUSHALL, a restart without
-- persistence, its ttl ran out): a stale high-water repeats tokens.
-- A floor that is a positive number is a proposed token: it stands in for
-- the clock as proposal.lua's proposed says (that file comes before this
-- one in every script that mints).

-- clock_or_proposal returns the server clock in µs, or the proposal floor
-- when it stands in for it.
local function clock_or_proposal(floor)
  local t = redis.call('TIME')
  return proposed(floor, tonumber(t[1]) * 1000000 + tonumber(t[2]))
end

local function mint(fence, fenceTTL, floor)
  local token = incr_high_water(fence) -- highwater.lua, before this file
  if not token then
    return nil
  end
  if token == 1 then
    token = clock_or_proposal(floor)
    redis.call('SET', fence, string.format('%d', token), 'PX', fenceTTL)
  elseif floor ~= '0' then
    local now = clock_or_proposal(floor)
    if now > token then
      token = now
      redis.call('SET', fence, string.format('%d', token), 'KEEPTTL')
    end
  end
  return string.format('%d', token)
end
