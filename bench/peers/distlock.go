package peers

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
)

// distlockLocker is one distlock Client on engine/redis, or on engine/quorum
// over five engine/redis nodes. For a Client per goroutine (one per
// process), see Separate.
type distlockLocker struct {
	client  *distlock.Client
	engines []engine.Engine
	rdbs    []*goredis.Client
	opts    []distlock.Option // passed to every Acquire
}

// Acquire implements Locker with Client.Acquire; *distlock.Lease is the Held.
func (l *distlockLocker) Acquire(ctx context.Context, name string) (Held, error) {
	lease, err := l.client.Acquire(ctx, name, l.opts...)
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Waiters implements Inspector with Client.Inspect.
func (l *distlockLocker) Waiters(ctx context.Context, name string) (int, error) {
	info, err := l.client.Inspect(ctx, name)
	if err != nil {
		return 0, err
	}
	return info.Waiters, nil
}

// Close closes the Client, then the engines, then the go-redis clients.
func (l *distlockLocker) Close() error {
	var errs []error
	if l.client != nil {
		errs = append(errs, l.client.Close())
	}
	for _, e := range l.engines {
		errs = append(errs, e.Close())
	}
	errs = append(errs, closeAll(l.rdbs))
	return errors.Join(errs...)
}

// distlockOpts returns the Acquire options of a row: the target's ttl, then
// the row's own options.
func distlockOpts(t Target, extra []distlock.Option) []distlock.Option {
	var opts []distlock.Option
	if t.TTL > 0 {
		opts = append(opts, distlock.WithTTL(t.TTL))
	}
	return append(opts, extra...)
}

// newDistlockSingle builds a distlock Client on engine/redis over its own
// go-redis client of the given style; extra are Acquire options of the row.
func newDistlockSingle(t Target, style clientStyle, extra []distlock.Option) (Locker, error) {
	rdb := newGoRedis(t.Addrs[0], style, t.Counter)
	l := &distlockLocker{rdbs: []*goredis.Client{rdb}, opts: distlockOpts(t, extra)}
	eng, err := redisengine.New(rdb)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	l.engines = append(l.engines, eng)
	l.client = distlock.New(eng)
	return l, nil
}

// newDistlockQuorum builds a distlock Client on engine/quorum over one
// engine/redis per address (tuned go-redis clients).
func newDistlockQuorum(t Target, opts ...quorum.Option) (Locker, error) {
	l := &distlockLocker{opts: distlockOpts(t, nil)}
	var nodes []engine.Engine
	for _, a := range t.Addrs {
		rdb := newGoRedis(a, tuned, t.Counter)
		l.rdbs = append(l.rdbs, rdb)
		eng, err := redisengine.New(rdb)
		if err != nil {
			_ = l.Close()
			return nil, err
		}
		nodes = append(nodes, eng)
	}
	q, err := quorum.New(nodes, opts...)
	if err != nil {
		for _, n := range nodes {
			_ = n.Close()
		}
		_ = l.Close()
		return nil, err
	}
	l.engines = []engine.Engine{q} // the quorum closes its nodes
	l.client = distlock.New(q)
	return l, nil
}

// Distlock is distlock on one node, on a tuned go-redis client, default
// options (ttl 30s, auto-renewal on).
func Distlock() Variant {
	return DistlockWith("distlock", "engine/redis, defaults; go-redis pool 128")
}

// DistlockWith is distlock on one node, on a tuned go-redis client, passing
// opts to every Acquire: a row for an option (a fair mode, say) is one line,
// DistlockWith("distlock (X)", "…", distlock.WithX()).
func DistlockWith(name, settings string, opts ...distlock.Option) Variant {
	return Variant{
		Name: name, Lib: "distlock", Kind: Subject, Settings: settings,
		New: func(t Target) (Locker, error) { return newDistlockSingle(t, tuned, opts) },
	}
}

// DistlockReadme is distlock on the go-redis client its README shows
// (ContextTimeoutEnabled only; default pool).
func DistlockReadme() Variant {
	return Variant{
		Name: "distlock (README client)", Lib: "distlock", Kind: Subject,
		Settings: "engine/redis, defaults; go-redis default pool",
		New:      func(t Target) (Locker, error) { return newDistlockSingle(t, readmeDistlock, nil) },
	}
}

// DistlockQuorum is distlock's Redlock (engine/quorum) with the given
// options, on tuned go-redis clients.
func DistlockQuorum(name, settings string, opts ...quorum.Option) Variant {
	return Variant{
		Name: name, Lib: "distlock", Kind: Subject, Settings: settings,
		New: func(t Target) (Locker, error) { return newDistlockQuorum(t, opts...) },
	}
}
