-- Frees the lock KEYS[1] whoever holds it and publishes a wake-up on channel
-- ARGV[1] with command ARGV[2]. Returns 1 when it was held, 0 otherwise.
local held = redis.call('DEL', KEYS[1])
redis.call(ARGV[2], ARGV[1], 'released')
return held
