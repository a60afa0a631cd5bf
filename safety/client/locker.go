package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
)

// Lease is what the client loop needs of a held lock.
type Lease interface {
	Token() uint64
	Owner() string
	// Deadline is the local validity deadline (monotonic clock).
	Deadline() time.Time
	// Valid reports whether the holder may write now, and, when not,
	// whether the lease is over for good (lost or released).
	Valid() (ok, over bool)
	// Done is closed when the lease is over for good.
	Done() <-chan struct{}
	// Loss reports when and why the loss was signalled, if it was lost.
	Loss() (at time.Time, cause string, lost bool)
	Release(ctx context.Context) error
}

// Locker hands out leases on one lock service.
type Locker interface {
	Acquire(ctx context.Context, name string, wait bool) (Lease, error)
	Close() error
}

// redisOptions are the go-redis options of every lab connection: context
// deadlines bound commands, and no extra handshake commands.
func redisOptions(addr string) *goredis.Options {
	return &goredis.Options{
		Addr:                     addr,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		DialTimeout:              time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// newEngine builds the client's lock engine: one Redis node, or a quorum
// over every node, each node wrapped with slow. It returns the go-redis
// clients to close after the engine.
func newEngine(cfg Config, slow *Slow) (engine.Engine, []*goredis.Client, error) {
	var rdbs []*goredis.Client
	var nodes []engine.Engine
	for _, addr := range cfg.Nodes {
		rdb := goredis.NewClient(redisOptions(addr))
		rdbs = append(rdbs, rdb)
		e, err := redisengine.New(rdb)
		if err != nil {
			return nil, rdbs, err
		}
		nodes = append(nodes, slowNode{Engine: e, s: slow, name: e.String()})
	}
	if !cfg.Redlock {
		if len(nodes) != 1 {
			return nil, rdbs, fmt.Errorf("single-node mode with %d nodes", len(nodes))
		}
		return slowTop{Engine: nodes[0], s: slow, name: nodes[0].(fmt.Stringer).String()}, rdbs, nil
	}
	var opts []quorum.Option
	if cfg.NodeTimeout > 0 {
		opts = append(opts, quorum.WithNodeTimeout(cfg.NodeTimeout))
	}
	if cfg.NoFencing {
		opts = append(opts, quorum.WithoutFencing())
	}
	if cfg.NoQuorumValidity {
		opts = append(opts, quorum.WithoutValidityCheckForTesting())
	}
	q, err := quorum.New(nodes, opts...)
	if err != nil {
		return nil, rdbs, err
	}
	return slowTop{Engine: q, s: slow, name: q.String()}, rdbs, nil
}

// NewLocker builds the Locker of cfg.Impl on a fresh engine.
func NewLocker(cfg Config, slow *Slow) (Locker, error) {
	eng, rdbs, err := newEngine(cfg, slow)
	closeAll := func() {
		for _, r := range rdbs {
			_ = r.Close()
		}
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	switch cfg.Impl {
	case ImplLibrary, "":
		return &libLocker{c: distlock.New(eng), eng: eng, ttl: cfg.TTL, closeConns: closeAll}, nil
	case ImplNoValidity, ImplFromReply:
		return newNaive(eng, cfg, closeAll), nil
	}
	_ = eng.Close()
	closeAll()
	return nil, fmt.Errorf("unknown lease implementation %q", cfg.Impl)
}

// libLocker is distlock's Client.
type libLocker struct {
	c          *distlock.Client
	eng        engine.Engine
	ttl        time.Duration
	closeConns func()
}

func (l *libLocker) Acquire(ctx context.Context, name string, wait bool) (Lease, error) {
	var (
		lease *distlock.Lease
		err   error
	)
	if wait {
		lease, err = l.c.Acquire(ctx, name, distlock.WithTTL(l.ttl))
	} else {
		lease, err = l.c.TryAcquire(ctx, name, distlock.WithTTL(l.ttl))
	}
	if err != nil {
		return nil, err
	}
	return libLease{lease}, nil
}

func (l *libLocker) Close() error {
	err := l.c.Close()
	err = errors.Join(err, l.eng.Close())
	l.closeConns()
	return err
}

// libLease adapts *distlock.Lease.
type libLease struct{ *distlock.Lease }

func (l libLease) Valid() (ok, over bool) {
	err := l.Err()
	return err == nil, err != nil
}

func (l libLease) Loss() (time.Time, string, bool) {
	var lost *distlock.LostError
	if errors.As(l.Err(), &lost) {
		return lost.At, lost.Cause.String(), true
	}
	return time.Time{}, "", false
}

// quietLogger drops go-redis's own log lines (dial failures while the lab
// keeps a node down are expected, and the history says what happened).
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { goredis.SetLogger(quietLogger{}) }
