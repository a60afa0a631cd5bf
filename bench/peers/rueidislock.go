package peers

import (
	"context"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockLocker is rueidis' rueidislock.
type rueidislockLocker struct{ lk rueidislock.Locker }

func (l *rueidislockLocker) Acquire(ctx context.Context, name string) (Held, error) {
	_, cancel, err := l.lk.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	return cancelHeld(cancel), nil
}

func (l *rueidislockLocker) Close() error {
	l.lk.Close()
	return nil
}

// cancelHeld releases a rueidislock lock: its cancel function waits until
// the keys are deleted. rueidislock reports no release error.
type cancelHeld context.CancelFunc

func (c cancelHeld) Release(context.Context) error {
	c()
	return nil
}

func newRueidislock(t Target, majority int32, noLoop bool) (Locker, error) {
	opt := rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: t.Addrs[:1]},
		KeyMajority:    majority,
		NoLoopTracking: noLoop,
		KeyValidity:    t.TTL, // 0: the default, 5s
	}
	if t.Counter != nil {
		opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return countingRueidis{Client: c, c: t.Counter}, nil
		}
	}
	lk, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	return &rueidislockLocker{lk: lk}, nil
}

// Rueidislock is rueidislock as its README recommends for one Redis:
// KeyMajority 1 and NoLoopTracking (Redis >= 7.0.5).
func Rueidislock() Variant {
	return Variant{
		Name: "rueidislock", Lib: "rueidislock", Kind: Peer,
		Settings: "KeyMajority 1, NoLoopTracking (README); validity 5s",
		New:      func(t Target) (Locker, error) { return newRueidislock(t, 1, true) },
	}
}

// RueidislockDefaults is rueidislock with its defaults: KeyMajority 2 (two
// of three keys, acquired one after the other), no NOLOOP.
func RueidislockDefaults() Variant {
	return Variant{
		Name: "rueidislock (defaults)", Lib: "rueidislock", Kind: Peer,
		Settings: "defaults: KeyMajority 2 (3 keys)",
		New:      func(t Target) (Locker, error) { return newRueidislock(t, 0, false) },
	}
}

// countingRueidis counts the requests of a rueidis client.
type countingRueidis struct {
	rueidis.Client
	c *Counter
}

func (w countingRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	w.c.add(1)
	return w.Client.Do(ctx, cmd)
}

func (w countingRueidis) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	w.c.add(len(multi))
	return w.Client.DoMulti(ctx, multi...)
}

func (w countingRueidis) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	w.c.add(1)
	return w.Client.DoCache(ctx, cmd, ttl)
}

func (w countingRueidis) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	w.c.add(len(multi))
	return w.Client.DoMultiCache(ctx, multi...)
}
