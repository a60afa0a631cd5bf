package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// MinTTL is the shortest lease ttl the engine declares: etcd raises shorter
// lease ttls to 1.5 election timeouts, 2 s with etcd's default 1 s election
// timeout. A cluster with a longer election timeout needs WithMinTTL.
const MinTTL = 2 * time.Second

// reserveTTL is how long a release keeps the lock for the head of the
// queue: engine.ReserveTTL, raised to the shortest lease etcd keeps.
const reserveTTL = 2 // seconds

// maxConflicts bounds the transactions one call retries after another
// client changed the name between its read and its write.
const maxConflicts = 64

// Engine is a lock authority on an etcd cluster. It is safe for concurrent
// use. The zero value is not usable; call New.
type Engine struct {
	cli    *clientv3.Client
	owned  bool // WithOwnedClient: Close closes cli
	keys   keyspace
	minTTL time.Duration
	// attempt bounds one request to etcd (WithAttemptTimeout).
	attempt time.Duration

	pool    leasePool
	leaseMu sync.Mutex
	kept    map[clientv3.LeaseID]time.Time // lease -> expiry at the latest renewal sent
	// tainted: leases a write of unknown outcome put a key on (see taint).
	tainted map[clientv3.LeaseID]bool

	heads   heads        // the waiters of this engine believed to head their queue
	busy    busyNames    // names whose queue this engine saw non-empty lately
	waiters waiterLeases // the leases of this engine's waiters
	locks   lockLeases   // the leases of the locks this engine granted or renewed
	cfgs    configs      // the leases of the shared locks' kinds and limits

	watch watcher

	spare spareLease
	bgCtx context.Context // ends at Close: the engine's own background requests
	bgEnd context.CancelFunc
	bg    sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

var (
	_ engine.Engine         = (*Engine)(nil)
	_ engine.Queuer         = (*Engine)(nil)
	_ engine.Describer      = (*Engine)(nil)
	_ engine.ForceReleaser  = (*Engine)(nil)
	_ engine.HolderReleaser = (*Engine)(nil)
	_ engine.OnceReleaser   = (*Engine)(nil)
	_ engine.MetadataSetter = (*Engine)(nil)
	_ engine.Lister         = (*Engine)(nil)
	_ engine.LeakFinder     = (*Engine)(nil)
)

// Option configures an Engine.
type Option func(*Engine)

// WithPrefix sets the prefix of every key the engine writes (default
// DefaultPrefix). Engines that share locks must use the same prefix.
func WithPrefix(prefix string) Option { return func(e *Engine) { e.keys.root = prefix } }

// WithMinTTL declares a minimum lease ttl above MinTTL, for a cluster whose
// election timeout is longer than etcd's default 1 s (etcd raises every lease
// ttl to 1.5 election timeouts): distlock then rounds ttls up to it. d is
// rounded up to whole seconds, as etcd grants them, and lowered to the
// longest ttl distlock takes (rules.MaxTTL, 24 h), so that a ttl rounded
// up to it stays within that maximum. The URL parameter min_ttl refuses
// both instead (a bad URL).
func WithMinTTL(d time.Duration) Option {
	if r := d % time.Second; r > 0 {
		d += time.Second - r
	}
	return func(e *Engine) { e.minTTL = min(max(d, MinTTL), rules.MaxTTL) }
}

// WithOwnedClient makes the engine own its client: Close closes it too
// (an engine opened by URL owns the client it made).
func WithOwnedClient() Option { return func(e *Engine) { e.owned = true } }

// New returns an engine on the etcd cluster that cli talks to. The engine
// does not close cli (unless WithOwnedClient).
func New(cli *clientv3.Client, opts ...Option) *Engine {
	e := &Engine{cli: cli, keys: keyspace{root: DefaultPrefix}, minTTL: MinTTL, attempt: DefaultAttemptTimeout,
		kept: make(map[clientv3.LeaseID]time.Time)}
	for _, o := range opts {
		o(e)
	}
	e.bgCtx, e.bgEnd = context.WithCancel(context.Background())
	e.watch.init(e)
	return e
}

// Capabilities implements engine.Describer: fair waiting (the queue is in
// etcd, in arrival order), and ttls in whole seconds of at least MinTTL.
func (e *Engine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Fair: true, MinTTL: e.minTTL, TTLGranularity: time.Second}
}

// Close stops the engine's watches and ends its subscriptions. It does not
// close the etcd client (unless WithOwnedClient). Leases the engine keeps for reuse expire on their
// own within their ttl. With WithOwnedClient it closes the client last.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.watch.close()
	e.bgEnd()
	e.bg.Wait()
	if e.owned {
		return e.cli.Close()
	}
	return nil
}

// String names the engine by its endpoints, for messages.
func (e *Engine) String() string { return "etcd " + strings.Join(e.cli.Endpoints(), ",") }

// check fails after Close and when ctx is done.
func (e *Engine) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	return nil
}

// BackendError reports a failed request to etcd: the outcome of the
// operation is unknown. It unwraps to the etcd client's error.
type BackendError struct {
	Op  string // what the engine was doing
	Err error
}

func (e *BackendError) Error() string { return "etcd: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the etcd client's error.
func (e *BackendError) Unwrap() error { return e.Err }

func backendErr(op string, err error) error {
	var be *BackendError
	if errors.As(err, &be) {
		return err
	}
	return &BackendError{Op: op, Err: err}
}

// ErrConflict is reported when a call lost its transaction to other
// clients' changes maxConflicts times in a row.
var ErrConflict = errors.New("etcd: too many conflicting changes")

// errLeaseLost reports a lease that could not be renewed after a grant.
var errLeaseLost = errors.New("the grant's lease could not be renewed")

func conflict(op, name string) error { return fmt.Errorf("%s %q: %w", op, name, ErrConflict) }
