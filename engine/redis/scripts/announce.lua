-- Announces a grant of the lock KEYS[1] (an election's campaign,
-- engine.AcquireRequest.Announce): while ARGV[1] holds it, marks it so that
-- its release publishes a wake-up too; then, whoever holds it, publishes a
-- message on the channel KEYS[1] (command ARGV[2]: PUBLISH or SPUBLISH), so
-- that observers read the lock again. (Published even when the grant is
-- gone already: its unmarked release published nothing.)
-- Returns 1 when ARGV[1] holds the lock, 0 otherwise.
local v = redis.call('GET', KEYS[1])
local held = 0
if v then
  local s = decode(v)
  if s.o == ARGV[1] then
    held = 1
    if not s.w then
      s.w = true
      redis.call('SET', KEYS[1], encode(s), 'KEEPTTL')
    end
  end
end
redis.call(ARGV[2], KEYS[1], 'announced')
return held
