-- incr_high_water increments the fencing high-water key and returns its
-- new value, or nil, having changed nothing, when the key holds no token a
-- grant may take: not an integer, not a string, past INCR's range, or past
-- 2^53-1 (engine.MaxToken), high-waters written by hand; the caller
-- refuses the grant as exhausted, never granting a token clients cannot
-- hold exactly. Any other error is the server refusing writes (READONLY on
-- a replica, NOREPLICAS under min-replicas-to-write, OOM, MISCONF): it is
-- raised as the server's error, a backend failure, never taken for an
-- exhausted name.
local function incr_high_water(key)
  local token = redis.pcall('INCR', key)
  if type(token) == 'table' then
    local err = token.err or ''
    if string.find(err, 'WRONGTYPE', 1, true) or string.find(err, 'not an integer', 1, true)
      or string.find(err, 'overflow', 1, true) then
      return nil
    end
    error(token)
  end
  if token > 9007199254740991 then
    redis.call('DECR', key)
    return nil
  end
  return token
end
