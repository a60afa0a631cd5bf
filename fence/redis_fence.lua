-- Fenced write: check a fencing token against the resource's high-water mark
-- and, iff it is not stale, run one Redis command and raise the mark.
--
-- KEYS[1]   fence key: a hash with fields "token" and "holder"
-- KEYS[2]   write id key: named after this call's write id (unique per Exec
--           call), in the fence key's hash slot; set, with an expiry, when
--           the write runs
-- KEYS[3..] the keys the command touches (declared for Redis Cluster)
-- ARGV[1]   fencing token, canonical decimal digits (no sign, no leading zero)
-- ARGV[2]   holder
-- ARGV[3]   how long the write id key lives, in milliseconds
-- ARGV[4..] the command and its arguments
--
-- Reply: {1, command reply} when the write ran,
--        {0, highest token as decimal string} when the token is stale,
--        {2} when the write id key exists: this call's write was applied
--        already, and this is a copy resent by the client after its reply
--        was lost. It is not run a second time, whatever was written since
--        (by the same holder or a newer one).
-- A failing command is returned as its error reply; the mark is not raised
-- and the write id is not recorded.
--
-- Tokens are compared as digit strings, never as Lua numbers: doubles are
-- exact only below 2^53 and tostring() would print 1.792e+15.

local token, holder = ARGV[1], ARGV[2]

local function canonical(s)
  return type(s) == 'string' and #s <= 20 and string.match(s, '^[1-9][0-9]*$') ~= nil
end

-- less(a, b) reports a < b for canonical decimal strings, byte by byte so
-- that the result does not depend on the server's collation locale.
local function less(a, b)
  if #a ~= #b then
    return #a < #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return false
end

if not canonical(token) then
  return redis.error_reply('ERR fence: token is not a positive decimal integer')
end
if #ARGV < 4 then
  return redis.error_reply('ERR fence: no command')
end

if redis.call('EXISTS', KEYS[2]) == 1 then
  return {2}
end

local mark = redis.call('HMGET', KEYS[1], 'token', 'holder')
local highest, owner = mark[1], mark[2]
if highest then
  if not canonical(highest) then
    return redis.error_reply('ERR fence: field "token" of the fence key is not a fencing token')
  end
  if less(token, highest) or (token == highest and holder ~= owner) then
    return {0, highest}
  end
end

local reply = redis.pcall(unpack(ARGV, 4))
if type(reply) == 'table' and reply.err then
  return reply
end
redis.call('HSET', KEYS[1], 'token', token, 'holder', holder)
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return {1, reply}
