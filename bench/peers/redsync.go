package peers

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	goredispool "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
)

// redsyncLocker is go-redsync/redsync v4 over go-redis v9 pools, one per
// node. A Mutex is made per Acquire (a Mutex must not be shared by
// goroutines).
type redsyncLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
	rdbs []*goredis.Client
}

// errNotReleased: Unlock reported that a majority did not release.
var errNotReleased = errors.New("redsync: unlock did not reach a majority")

func (l *redsyncLocker) Acquire(ctx context.Context, name string) (Held, error) {
	m := l.rs.NewMutex(name, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return (*redsyncHeld)(m), nil
}

func (l *redsyncLocker) Close() error { return closeAll(l.rdbs) }

// redsyncHeld is a locked Mutex.
type redsyncHeld redsync.Mutex

func (h *redsyncHeld) Release(ctx context.Context) error {
	ok, err := (*redsync.Mutex)(h).UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errNotReleased
	}
	return nil
}

func newRedsync(t Target, style clientStyle, opts ...redsync.Option) (Locker, error) {
	l := &redsyncLocker{}
	var pools []redis.Pool
	for _, a := range t.Addrs {
		rdb := newGoRedis(a, style, t.Counter)
		l.rdbs = append(l.rdbs, rdb)
		pools = append(pools, goredispool.NewPool(rdb))
	}
	l.rs = redsync.New(pools...)
	if t.TTL > 0 {
		opts = append([]redsync.Option{redsync.WithExpiry(t.TTL)}, opts...)
	}
	l.opts = opts
	return l, nil
}

// Redsync is redsync with default Mutex options (expiry 8s, 32 tries,
// 50-250ms retry delay) on tuned go-redis clients.
func Redsync() Variant {
	return Variant{
		Name: "redsync", Lib: "redsync", Kind: Peer,
		Settings: "defaults; go-redis pool 128",
		New:      func(t Target) (Locker, error) { return newRedsync(t, tuned) },
	}
}

// RedsyncReadme is redsync exactly as its README sets it up: default Mutex
// options on go-redis clients with only the address set (default pool, no
// context deadlines on socket reads, so the 3s read timeout applies).
func RedsyncReadme() Variant {
	return Variant{
		Name: "redsync (README client)", Lib: "redsync", Kind: Peer,
		Settings: "defaults; go-redis default options",
		New:      func(t Target) (Locker, error) { return newRedsync(t, readme) },
	}
}

// RedsyncFailFast is redsync's best documented Redlock setting: WithFailFast,
// on tuned go-redis clients (context deadlines honoured, so the per-node
// acquire timeout expiry*0.05 applies).
func RedsyncFailFast() Variant {
	return Variant{
		Name: "redsync (fail-fast)", Lib: "redsync", Kind: Peer,
		Settings: "WithFailFast(true); go-redis pool 128, ContextTimeoutEnabled",
		New: func(t Target) (Locker, error) {
			return newRedsync(t, tuned, redsync.WithFailFast(true))
		},
	}
}

// RedsyncPoll is redsync polling every d, with tries enough for a wait of
// about 10s.
func RedsyncPoll(d time.Duration) Variant {
	tries := int(10 * time.Second / d)
	return Variant{
		Name: "redsync (retry " + d.String() + ")", Lib: "redsync", Kind: Peer,
		Settings: "WithRetryDelay(" + d.String() + "), WithTries(10s/delay)",
		New: func(t Target) (Locker, error) {
			return newRedsync(t, tuned, redsync.WithRetryDelay(d), redsync.WithTries(tries))
		},
	}
}
