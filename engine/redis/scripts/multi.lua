-- Grants every lock of a set to ARGV[1] for ARGV[2] ms, or none
-- (engine.MultiAcquirer). KEYS: six per name, as acquire.lua's short form
-- takes them: the lock, its queue, the shared lock's hash, holders and
-- waiters' heartbeat deadlines, the fencing high-water. ARGV: owner, ttl
-- ms, metadata, high-water ttl ms, time floor ('0' turns it off), attempt
-- id (the owner's own for a one-off owner).
-- A name is taken only when its lock is free, nobody queues for it and no
-- live shared holder has it. Every name is checked before any is granted:
-- a live shared holder or queued shared waiter (queued waiters bind the
-- name to their kind, as holders do) answers the error reply 'DISTLOCK kind <k> <i>' (the
-- shared lock's kind and the name's index, 1-based), wherever it is in the
-- set (a kind error is never contention: it wins over a name held before
-- it); otherwise a refusal answers {0, i, holder, pttl} for the first name
-- i (1-based) that is held ('' and 0 when it is free but waiters queue);
-- either having changed nothing.
-- A grant answers {1, token...}, one token per name in order, each minted
-- by mint.lua, as acquire.lua mints it. A fence past 2^53-1 undoes the set's
-- grants so far and answers 'DISTLOCK fence exhausted'.
-- A name ARGV[1] holds under this request's attempt id ARGV[6] was
-- granted by this very request: a client library resends a command whose
-- reply was lost. Such a name keeps its grant and its token (the answer
-- repeats it); a refusal drops every such grant first, so that a refused
-- request holds nothing. A name the owner holds under another attempt (an
-- explicit owner's own lock) is held, as by anyone else: the set is
-- refused and that hold is left alone.
local now
local mine = {} -- by 0-based index: the token of a name this request holds
local blocked -- the refusal of the first name held or queued for

-- ours reports whether the lock s was granted by this request.
local function ours(s)
  return s.o == ARGV[1] and (s.a or s.o) == ARGV[6]
end

-- refuse drops the names this request holds and returns answer.
local function refuse(answer)
  for j = 0, #KEYS / 6 - 1 do
    local v = redis.call('GET', KEYS[j * 6 + 1])
    if v and ours(decode(v)) then
      redis.call('DEL', KEYS[j * 6 + 1])
    end
  end
  return answer
end

for i = 0, #KEYS / 6 - 1 do
  local L, Q, S, SH, SQD = KEYS[i * 6 + 1], KEYS[i * 6 + 2], KEYS[i * 6 + 3], KEYS[i * 6 + 4], KEYS[i * 6 + 5]
  local n = redis.call('EXISTS', L, Q, SH, SQD)
  if n > 0 then
    if redis.call('EXISTS', SH, SQD) > 0 then
      if not now then
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000000 + tonumber(t[2])
      end
      local live = string.format('(%d', now)
      if redis.call('ZCOUNT', SH, live, '+inf') > 0 or redis.call('ZCOUNT', SQD, live, '+inf') > 0 then
        local k = redis.call('HGET', S, 'k')
        if k then
          return refuse(redis.error_reply('DISTLOCK kind ' .. k .. ' ' .. (i + 1)))
        end
      end
    end
    local v = redis.call('GET', L)
    if v then
      local s = decode(v)
      if ours(s) then
        mine[i] = s.t
      else
        blocked = blocked or {0, i + 1, s.o, redis.call('PTTL', L)}
      end
    elseif redis.call('EXISTS', Q) == 1 then
      blocked = blocked or {0, i + 1, '', 0}
    end
  end
end
if blocked then
  return refuse(blocked)
end
local out = {1}
for i = 0, #KEYS / 6 - 1 do
  local L, fence = KEYS[i * 6 + 1], KEYS[i * 6 + 6]
  local token = mine[i] or mint(fence, ARGV[4], ARGV[5])
  if not token then
    return refuse(redis.error_reply('DISTLOCK fence exhausted'))
  end
  if not mine[i] then
    local v
    if ARGV[3] == '' and ARGV[6] == ARGV[1] then
      v = token .. ' ' .. ARGV[1]
    else
      v = cjson.encode({o = ARGV[1], c = 1, t = token, m = ARGV[3], a = ARGV[6]})
    end
    redis.call('SET', L, v, 'PX', ARGV[2])
  end
  out[#out + 1] = token
end
return out
