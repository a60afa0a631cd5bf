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

// distlockLocker is one distlock Client (or one per worker) on engine/redis,
// or on engine/quorum over five engine/redis nodes.
type distlockLocker struct {
	clients []*distlock.Client // one, or one per worker
	engines []engine.Engine
	rdbs    []*goredis.Client
	opts    []distlock.Option
}

// Acquire implements Locker with Client.Acquire; *distlock.Lease is the Held.
func (l *distlockLocker) Acquire(ctx context.Context, name string) (Held, error) {
	lease, err := l.clients[0].Acquire(ctx, name, l.opts...)
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// ForWorker implements PerWorker when the Locker has a Client per worker.
func (l *distlockLocker) ForWorker(i int) Locker {
	if len(l.clients) == 1 {
		return l
	}
	return &distlockWorker{c: l.clients[i%len(l.clients)], opts: l.opts}
}

// Close closes the Clients, then the engines, then the go-redis clients.
func (l *distlockLocker) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	for _, e := range l.engines {
		errs = append(errs, e.Close())
	}
	errs = append(errs, closeAll(l.rdbs))
	return errors.Join(errs...)
}

// distlockWorker is one worker's own Client.
type distlockWorker struct {
	c    *distlock.Client
	opts []distlock.Option
}

func (w *distlockWorker) Acquire(ctx context.Context, name string) (Held, error) {
	lease, err := w.c.Acquire(ctx, name, w.opts...)
	if err != nil {
		return nil, err
	}
	return lease, nil
}

func (w *distlockWorker) Close() error { return nil } // the parent closes

func distlockOpts(t Target) []distlock.Option {
	if t.TTL > 0 {
		return []distlock.Option{distlock.WithTTL(t.TTL)}
	}
	return nil
}

// newDistlockSingle builds a distlock Client on engine/redis over one go-redis
// client of the given style; with perWorker, t.Workers Clients (each with
// its own engine, hence its own pub/sub connection) share that go-redis
// client.
func newDistlockSingle(t Target, style clientStyle, perWorker bool) (Locker, error) {
	rdb := newGoRedis(t.Addrs[0], style, t.Counter)
	l := &distlockLocker{rdbs: []*goredis.Client{rdb}, opts: distlockOpts(t)}
	n := 1
	if perWorker {
		n = max(t.Workers, 1)
	}
	for range n {
		eng, err := redisengine.New(rdb)
		if err != nil {
			_ = l.Close()
			return nil, err
		}
		l.engines = append(l.engines, eng)
		l.clients = append(l.clients, distlock.New(eng))
	}
	return l, nil
}

// newDistlockQuorum builds a distlock Client on engine/quorum over one
// engine/redis per address (tuned go-redis clients).
func newDistlockQuorum(t Target, opts ...quorum.Option) (Locker, error) {
	l := &distlockLocker{opts: distlockOpts(t)}
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
	l.clients = []*distlock.Client{distlock.New(q)}
	return l, nil
}

// Distlock is distlock on one node, on a tuned go-redis client, default
// options (ttl 30s, auto-renewal on).
func Distlock() Variant {
	return Variant{
		Name: "distlock", Lib: "distlock", Kind: Subject,
		Settings: "engine/redis, defaults; go-redis pool 128",
		New:      func(t Target) (Locker, error) { return newDistlockSingle(t, tuned, false) },
	}
}

// DistlockReadme is distlock on the go-redis client its README shows
// (ContextTimeoutEnabled only; default pool).
func DistlockReadme() Variant {
	return Variant{
		Name: "distlock (README client)", Lib: "distlock", Kind: Subject,
		Settings: "engine/redis, defaults; go-redis default pool",
		New:      func(t Target) (Locker, error) { return newDistlockSingle(t, readmeDistlock, false) },
	}
}

// DistlockPerWorker gives every worker goroutine its own distlock Client and
// engine (its own pub/sub connection), as separate processes would have;
// they share one go-redis pool.
func DistlockPerWorker() Variant {
	return Variant{
		Name: "distlock (a Client per goroutine)", Lib: "distlock", Kind: Subject,
		Settings: "one Client+engine per goroutine, like separate processes",
		New:      func(t Target) (Locker, error) { return newDistlockSingle(t, tuned, true) },
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
