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
	"github.com/distlock/distlock/safety/history"
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

// SentinelMaster is the master name the sentinels monitor
// (redistest.SentinelMaster).
const SentinelMaster = "mymaster"

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
// over every node, each node wrapped with slow. The wrappers hide the
// engine's waiter queue unless cfg.Queue (single-node mode), where entered
// hears of each waiting call's entry into it. It returns the go-redis
// clients to close after the engine.
func newEngine(cfg Config, slow *Slow, entered func(waiter string, sent, reply time.Time, head bool)) (engine.Engine, []*goredis.Client, error) {
	var rdbs []*goredis.Client
	var nodes []engine.Engine
	var queues []engine.Queuer
	addrs := cfg.Nodes
	if cfg.Sentinel {
		addrs = addrs[:1] // one deployment, found through every sentinel
	}
	var nodeOpts []redisengine.Option
	if cfg.NoTimeFloor {
		nodeOpts = append(nodeOpts, redisengine.WithoutTimeFloor())
	}
	for _, addr := range addrs {
		rdb := goredis.NewClient(redisOptions(addr))
		if cfg.Sentinel {
			rdb = goredis.NewFailoverClient(&goredis.FailoverOptions{
				MasterName: SentinelMaster, SentinelAddrs: cfg.Nodes,
				ContextTimeoutEnabled: true, DisableIdentity: true, DialTimeout: time.Second,
			})
		}
		rdbs = append(rdbs, rdb)
		e, err := redisengine.New(rdb, nodeOpts...)
		if err != nil {
			return nil, rdbs, err
		}
		nodes = append(nodes, slowNode{Engine: e, s: slow, name: e.String()})
		queues = append(queues, e)
	}
	if cfg.Queue && cfg.Redlock {
		return nil, rdbs, errors.New("the lab waits in the queue in single-node mode only (a quorum's queue is not fair)")
	}
	if !cfg.Redlock {
		if len(nodes) != 1 {
			return nil, rdbs, fmt.Errorf("single-node mode with %d nodes", len(nodes))
		}
		top := slowTop{Engine: nodes[0], s: slow, name: nodes[0].(fmt.Stringer).String()}
		if cfg.Shared != "" {
			sh, ok := queues[0].(engine.Sharer)
			if !ok {
				return nil, rdbs, errors.New("the Redis engine keeps no shared locks (engine.Sharer)")
			}
			return sharedTop{slowTop: top, Sharer: sh}, rdbs, nil
		}
		if cfg.Queue {
			qt := &queueTop{slowTop: top, q: queues[0], entered: entered}
			qt.d, _ = queues[0].(engine.Describer)
			return qt, rdbs, nil
		}
		return top, rdbs, nil
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

// NewLocker builds the Locker of cfg.Impl on a fresh engine. With
// cfg.Queue, entered (may be nil) hears of each waiting call's entry into
// the lock's queue.
func NewLocker(cfg Config, slow *Slow, entered func(waiter string, sent, reply time.Time, head bool)) (Locker, error) {
	var (
		eng      engine.Engine
		closeAll func()
		err      error
	)
	switch cfg.Backend {
	case BackendEtcd, BackendPostgres:
		eng, closeAll, err = newBackendEngine(cfg)
	case BackendZooKeeper:
		eng, closeAll, err = newZKEngine(cfg)
	default:
		var rdbs []*goredis.Client
		eng, rdbs, err = newEngine(cfg, slow, entered)
		closeAll = func() {
			for _, r := range rdbs {
				_ = r.Close()
			}
		}
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	switch cfg.Impl {
	case ImplLibrary, "", ImplIgnoreLoss, ImplLateLoss:
		if cfg.Impl == ImplIgnoreLoss && !cfg.Elect {
			break
		}
		l := &libLocker{c: distlock.New(eng), eng: eng, ttl: cfg.TTL, closeConns: closeAll}
		if cfg.Impl == ImplLateLoss {
			l.late = LateLoss
		}
		if cfg.Queue && cfg.Policy == history.PolicyFair {
			l.fair = true
		}
		if cfg.Elect {
			l.elect, l.value = true, cfg.ID
			if cfg.Impl == ImplIgnoreLoss {
				l.ignore = cfg.TTL
			}
		}
		return l, nil
	case ImplNoValidity, ImplFromReply:
		return newNaive(eng, cfg, closeAll), nil
	}
	_ = eng.Close()
	closeAll()
	return nil, fmt.Errorf("unknown lease implementation %q", cfg.Impl)
}

// sharedTop shows the Redis engine's shared locks (engine.Sharer) to the
// Client, past the slow wrapper (the shared-lock scenarios).
type sharedTop struct {
	slowTop
	engine.Sharer
}

// libLocker is distlock's Client.
type libLocker struct {
	c          *distlock.Client
	eng        engine.Engine
	ttl        time.Duration
	fair       bool // waiting calls pass WithFair
	closeConns func()
	// elect: Acquire campaigns (Config.Elect) with value; ignore > 0 is
	// the control leader's time acting past its loss (ImplIgnoreLoss).
	elect  bool
	value  string
	ignore time.Duration
	// late > 0: leases tell of a loss that much late (ImplLateLoss).
	late time.Duration
}

// wrap is the lab's Lease of lease.
func (l *libLocker) wrap(lease *distlock.Lease) Lease {
	if l.late > 0 {
		return newLateLease(lease, l.late)
	}
	return libLease{lease}
}

func (l *libLocker) Acquire(ctx context.Context, name string, wait bool) (Lease, error) {
	var (
		lease *distlock.Lease
		err   error
	)
	if l.elect {
		return l.campaign(ctx, name)
	}
	if wait {
		opts := []distlock.Option{distlock.WithTTL(l.ttl)}
		if l.fair {
			opts = append(opts, distlock.WithFair())
		}
		lease, err = l.c.Acquire(ctx, name, opts...)
	} else {
		lease, err = l.c.TryAcquire(ctx, name, distlock.WithTTL(l.ttl))
	}
	if err != nil {
		return nil, err
	}
	return l.wrap(lease), nil
}

// SharedLocker hands out shared locks' grants.
type SharedLocker interface {
	// AcquireShared takes weight permits of semaphore name (limit), or
	// (limit 0) the read or write side of RW lock name.
	AcquireShared(ctx context.Context, name string, wait bool, limit, weight int, write bool) (Lease, error)
}

func (l *libLocker) AcquireShared(ctx context.Context, name string, wait bool, limit, weight int, write bool) (Lease, error) {
	var (
		lease *distlock.Lease
		err   error
	)
	opts := []distlock.Option{distlock.WithTTL(l.ttl)}
	switch {
	case limit > 0:
		sem := l.c.Semaphore(name, limit)
		opts = append(opts, distlock.WithWeight(weight))
		if wait {
			lease, err = sem.Acquire(ctx, opts...)
		} else {
			lease, err = sem.TryAcquire(ctx, opts...)
		}
	case write:
		rw := l.c.RWMutex(name)
		if wait {
			lease, err = rw.Lock(ctx, opts...)
		} else {
			lease, err = rw.TryLock(ctx, opts...)
		}
	default:
		rw := l.c.RWMutex(name)
		if wait {
			lease, err = rw.RLock(ctx, opts...)
		} else {
			lease, err = rw.TryRLock(ctx, opts...)
		}
	}
	if err != nil {
		return nil, err
	}
	return l.wrap(lease), nil
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
