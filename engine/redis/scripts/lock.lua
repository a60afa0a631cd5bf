-- The lock's value, one string. Short form '<token> <owner>' (or
-- '<token>*<owner>' once a waiter marked it): one hold, no metadata, the
-- attempt id is the owner, no release id. Otherwise a JSON object
-- {o: owner, c: holds, t: token (a string), m: metadata, a: attempt id,
-- rs: release ids (releaseids.lua; r: one, as older versions wrote),
-- w: waiters mark, q: the queue entry the grant took, which an Undo puts
-- back (queue.lua's q_taken)}. A token starts with a digit and JSON
-- with '{', so the first byte tells the form. engine/redis/value.go reads
-- the same format.

-- shortForm returns the position of the separator of a short-form value v,
-- or nil when v is not one.
local function shortForm(v)
  local p = string.find(v, '%D')
  if p and p > 1 and p < #v then
    local sep = string.byte(v, p)
    if sep == 32 or sep == 42 then
      return p
    end
  end
  return nil
end

-- decode returns the lock's fields; a value that is not a distlock lock
-- fails the script with a WRONGTYPE error.
local function decode(v)
  local p = shortForm(v)
  if p then
    return {o = string.sub(v, p + 1), c = 1, t = string.sub(v, 1, p - 1), w = string.byte(v, p) == 42}
  end
  if string.byte(v) == 123 then
    local ok, s = pcall(cjson.decode, v)
    if ok and type(s) == 'table' and type(s.o) == 'string' and type(s.c) == 'number' and type(s.t) == 'string' then
      return s
    end
  end
  error(redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no distlock lock'))
end

local function encode(s)
  if s.c == 1 and (s.m or '') == '' and (s.a or s.o) == s.o and not s.r and not s.rs and not s.q then
    return s.t .. (s.w and '*' or ' ') .. s.o
  end
  return cjson.encode(s)
end
