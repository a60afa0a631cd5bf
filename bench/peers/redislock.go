package peers

import (
	"context"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"
)

// redislockLocker is bsm/redislock on one go-redis client.
type redislockLocker struct {
	c   *redislock.Client
	ttl time.Duration
	opt *redislock.Options
	rdb *goredis.Client
}

func (l *redislockLocker) Acquire(ctx context.Context, name string) (Held, error) {
	lock, err := l.c.Obtain(ctx, name, l.ttl, l.opt)
	if err != nil {
		return nil, err
	}
	return lock, nil
}

func (l *redislockLocker) Close() error { return l.rdb.Close() }

func newRedislock(t Target, style clientStyle, retry redislock.RetryStrategy) (Locker, error) {
	rdb := newGoRedis(t.Addrs[0], style, t.Counter)
	ttl := t.TTL
	if ttl <= 0 {
		ttl = defaultTTL
	}
	var opt *redislock.Options
	if retry != nil {
		opt = &redislock.Options{RetryStrategy: retry}
	}
	return &redislockLocker{c: redislock.New(rdb), ttl: ttl, opt: opt, rdb: rdb}, nil
}

// Redislock is bsm/redislock with default options (no retry) on a tuned
// go-redis client, ttl 10s.
func Redislock() Variant {
	return Variant{
		Name: "redislock", Lib: "redislock", Kind: Peer,
		Settings: "defaults (no retry), ttl 10s; go-redis pool 128",
		New:      func(t Target) (Locker, error) { return newRedislock(t, tuned, nil) },
	}
}

// RedislockReadme is bsm/redislock on the go-redis client its README shows.
func RedislockReadme() Variant {
	return Variant{
		Name: "redislock (README client)", Lib: "redislock", Kind: Peer,
		Settings: "defaults, ttl 10s; go-redis default options",
		New:      func(t Target) (Locker, error) { return newRedislock(t, readme, nil) },
	}
}

// RedislockPoll is bsm/redislock retrying every d (LinearBackoff), the way
// it waits for a held lock; the wait ends at the ttl (10s).
func RedislockPoll(d time.Duration) Variant {
	return Variant{
		Name: "redislock (retry " + d.String() + ")", Lib: "redislock", Kind: Peer,
		Settings: "LinearBackoff(" + d.String() + "), ttl 10s",
		New: func(t Target) (Locker, error) {
			return newRedislock(t, tuned, redislock.LinearBackoff(d))
		},
	}
}
