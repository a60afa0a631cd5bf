-- Announces a grant of the lock KEYS[1] (an election's campaign,
-- engine.AcquireRequest.Announce): while ARGV[1] holds it, marks it so that
-- its release publishes a wake-up too; then publishes a message on the
-- channel KEYS[1] (command ARGV[2]: PUBLISH or SPUBLISH) for observers:
-- 'L <token> <pttl ms> <value>', the state they report without reading
-- the lock (engine/redis/notice.go), or, when ARGV[1] no longer holds it
-- or holds it without a value, 'announced', after which they read it.
-- (Published even when the grant is gone already: its unmarked release
-- published nothing.)
-- Returns 1 when ARGV[1] holds the lock, 0 otherwise.
local v = redis.call('GET', KEYS[1])
local held = 0
local msg = 'announced'
if v then
  local s = decode(v)
  if s.o == ARGV[1] then
    held = 1
    if not s.w then
      s.w = true
      redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
    end
    if (s.m or '') ~= '' then
      msg = 'L ' .. s.t .. ' ' .. redis.call('PTTL', KEYS[1]) .. ' ' .. s.m
    end
  end
end
redis.call(ARGV[2], KEYS[1], msg)
return held
