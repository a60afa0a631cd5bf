package redis

import (
	"context"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// A countdown latch (engine.Latcher) is a hash at {name}:latch, in the
// slot of the lock of the same name, with its count (n) and the id of the
// last CountDown (id); it is deleted when the count reaches zero, and the
// name's channel then carries a wake-up for its plain subscribers.
var (
	latchSetScript = newScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'n', ARGV[1])
return 1
`)
	// KEYS[2] is the name's channel; ARGV: the publish command, the id.
	latchCountDownScript = newScript(`
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if n <= 0 then
  return 0
end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'id') == ARGV[2] then
  return n
end
n = n - 1
if n == 0 then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[1], KEYS[2], 'latch')
else
  redis.call('HSET', KEYS[1], 'n', n, 'id', ARGV[2])
end
return n
`)
)

// latchKey names a countdown latch's hash.
func (e *Engine) latchKey(name string) string { return e.prefix + "{" + name + "}:latch" }

// SetCount implements engine.Latcher.
func (e *Engine) SetCount(ctx context.Context, name string, count int64) (bool, error) {
	if err := engine.CheckLatchCount(count); err != nil {
		return false, err // the script counts in doubles: exact up to 2^53
	}
	set, err := e.batch.run(ctx, latchSetScript, []string{e.latchKey(name)}, strconv.FormatInt(count, 10)).Int64()
	return set == 1, err
}

// CountDown implements engine.Latcher.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	return e.batch.run(ctx, latchCountDownScript, []string{e.latchKey(name), e.channel(name)}, e.publish, id).Int64()
}

// Count implements engine.Latcher.
func (e *Engine) Count(ctx context.Context, name string) (int64, error) {
	n, err := e.client.HGet(ctx, e.latchKey(name), "n").Int64()
	if err == goredis.Nil {
		return 0, nil
	}
	return n, err
}
