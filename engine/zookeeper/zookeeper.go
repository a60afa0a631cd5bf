package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/workpool"
)

// DefaultRoot is the path under which the engine keeps its nodes.
const DefaultRoot = "/distlock"

// DefaultSessionTimeout is the session timeout Dial asks for: ZooKeeper's
// default maximum (20 ticks of 2 s), above distlock's default ttl.
const DefaultSessionTimeout = 40 * time.Second

// maxConflicts bounds the rounds one call retries after another client
// changed the name between its read and its write.
const maxConflicts = 64

// Engine is a lock authority on a ZooKeeper ensemble. It is safe for
// concurrent use. The zero value is not usable; call New or Dial.
type Engine struct {
	conn zkConn // counted: Requests
	own  bool   // Close closes conn (Dial)
	// stopProbe ends the connection's probe (probe.go; Dial's engines),
	// after Close waited for the calls.
	stopProbe func()
	root      string
	session   time.Duration

	mu      sync.Mutex
	closed  bool
	held    map[key]child         // (name, owner) -> the held child as this engine last wrote it
	waiting map[key]waitNode      // (name, waiter) -> the waiter's child
	placed  map[key]chan struct{} // (name, waiter) -> closed when it takes a new place
	heads   map[key]headHint      // (name, waiter) -> its watch saw it head the line of a released lock

	done    chan struct{}  // closed by Close: subscriptions and workers end
	workers *workpool.Pool // run the client library's calls (workers.go)
	bg      sync.WaitGroup
}

// key names one owner's (or waiter's) child of a lock.
type key struct{ name, id string }

// waitNode is a waiter's child and the session it was created in.
type waitNode struct {
	path    string
	session int64
	d       data // what the child holds
	// wrote is the send time of the latest write of the child that the
	// ensemble answered (its creation, a heartbeat, a clock reading): the
	// child's heartbeat deadline is at least its ttl after it.
	wrote time.Time
}

var (
	_ engine.Engine              = (*Engine)(nil)
	_ engine.Queuer              = (*Engine)(nil)
	_ engine.Describer           = (*Engine)(nil)
	_ engine.OnceReleaser        = (*Engine)(nil)
	_ engine.ForceReleaser       = (*Engine)(nil)
	_ engine.HolderReleaser      = (*Engine)(nil)
	_ engine.MetadataSetter      = (*Engine)(nil)
	_ engine.Lister              = (*Engine)(nil)
	_ engine.LeakFinder          = (*Engine)(nil)
	_ engine.PermanentClassifier = (*Engine)(nil)
)

// Option configures an Engine.
type Option func(*Engine)

// WithRoot sets the path of the node under which the engine keeps its
// locks (default DefaultRoot). Engines that share locks must use the same
// root.
func WithRoot(root string) Option { return func(e *Engine) { e.root = strings.TrimRight(root, "/") } }

// WithSessionTimeout declares the session timeout the ensemble granted the
// connection given to New (default DefaultSessionTimeout): the longest
// lease ttl the engine takes. Declaring more than was granted breaks the
// lease's guarantee (the session, and the lock with it, may end first).
// Dial measures it.
func WithSessionTimeout(d time.Duration) Option { return func(e *Engine) { e.session = d } }

// New returns an engine on the ZooKeeper connection conn. The engine does
// not close conn. See WithSessionTimeout.
func New(conn *zk.Conn, opts ...Option) *Engine {
	e := &Engine{conn: &counted{zkConn: conn}, root: DefaultRoot, session: DefaultSessionTimeout,
		held: map[key]child{}, waiting: map[key]waitNode{}, placed: map[key]chan struct{}{}, heads: map[key]headHint{}, done: make(chan struct{})}
	e.workers = workpool.New(e.done, &e.bg, workerIdle)
	for _, o := range opts {
		o(e)
	}
	return e
}

// Dial connects to the ensemble's servers (host:port each) with a session
// of sessionTimeout (DefaultSessionTimeout when 0), waits for the session
// and returns an engine that owns the connection (Close closes it), with
// the session timeout the ensemble granted.
func Dial(ctx context.Context, servers []string, sessionTimeout time.Duration, opts ...Option) (*Engine, error) {
	if sessionTimeout <= 0 {
		sessionTimeout = DefaultSessionTimeout
	}
	granted := make(chan time.Duration, 1)
	log := grantLogger{granted}
	p := &prober{} // probe.go: a member that hangs is left for the next
	conn, events, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(log), zk.WithLogInfo(true), zk.WithDialer(p.dial))
	if err != nil {
		return nil, backendErr("connect", err)
	}
	go drain(events)
	probeDone, probed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(probed)
		p.run(conn, probeDone)
	}()
	select {
	case d := <-granted:
		e := New(conn, append(opts, WithSessionTimeout(d))...)
		e.own = true
		// The probe runs until Close has waited for the engine's calls: a
		// call hung on a member that hangs ends when the probe leaves it.
		e.stopProbe = func() {
			close(probeDone)
			<-probed
		}
		return e, nil
	case <-ctx.Done():
		close(probeDone)
		<-probed
		conn.Close()
		return nil, backendErr("connect", ctx.Err())
	}
}

// drain reads the connection's events until it closes.
func drain(events <-chan zk.Event) {
	for range events { //nolint:revive // the events carry nothing the engine needs
	}
}

// grantLogger takes the session timeout the server granted from the
// client library's log line (it has no other way to tell) and drops the
// rest.
type grantLogger struct{ granted chan time.Duration }

func (g grantLogger) Printf(format string, args ...any) {
	if !strings.HasPrefix(format, "authenticated: id=%d, timeout=%d") || len(args) < 2 {
		return
	}
	ms, err := strconv.ParseInt(fmt.Sprint(args[1]), 10, 64)
	if err != nil {
		return
	}
	select {
	case g.granted <- time.Duration(ms) * time.Millisecond:
	default:
	}
}

// Capabilities implements engine.Describer: fair waiting (the line of
// children is strictly FIFO), ttls in the ensemble clock's milliseconds.
// The session timeout bounds ttls from above (SessionTimeout); Acquire
// refuses a longer ttl.
func (e *Engine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Fair: true, MinTTL: MinTTL, TTLGranularity: time.Millisecond}
}

// MinTTL is the shortest ttl the engine keeps: the ensemble's clock counts
// milliseconds, and a shorter lease could not be renewed in time.
const MinTTL = 100 * time.Millisecond

// SessionTimeout is the session timeout the engine works with: the
// longest lease ttl it takes.
func (e *Engine) SessionTimeout() time.Duration { return e.session }

// Close ends the engine's subscriptions and waits for its background
// work. It closes the connection only when Dial opened it (the session
// ends: its waiters' places in line go with it). It deletes no holder's
// child: the leases it granted stay held until released or expired (a
// Close with leases kept hands them on, as the CLI's acquire does; a
// Client's Close releases its leases first).
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.done)
	e.mu.Unlock()
	e.bg.Wait()
	if e.stopProbe != nil {
		e.stopProbe()
	}
	if e.own {
		e.conn.Close()
	}
	return nil
}

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

// BackendError reports a failed request to ZooKeeper: the outcome of the
// operation is unknown. It unwraps to the client library's error.
type BackendError struct {
	Op  string // what the engine was doing
	Err error
}

func (e *BackendError) Error() string { return "zookeeper: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the client library's error.
func (e *BackendError) Unwrap() error { return e.Err }

func backendErr(op string, err error) error {
	var be *BackendError
	if errors.As(err, &be) {
		return err
	}
	return &BackendError{Op: op, Err: err}
}

// ErrSessionExpired is reported to a waiter whose session expired while
// it waited: its place in line went with the session, and the wait ends
// (no retry can give it back).
var ErrSessionExpired = errors.New("zookeeper: the session expired while waiting: the place in line is gone")

// ErrConflict is reported when a call lost its change to other clients'
// changes maxConflicts times in a row.
var ErrConflict = errors.New("zookeeper: too many conflicting changes")

// Permanent implements engine.PermanentClassifier: an expired session of a
// waiter, refused authentication and missing permissions end a wait at
// once.
func (e *Engine) Permanent(err error) bool {
	return errors.Is(err, ErrSessionExpired) || errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed)
}

func conflict(op, name string) error { return fmt.Errorf("%s %q: %w", op, name, ErrConflict) }

// checkTTL refuses a ttl longer than the session timeout the ensemble
// granted (docs/ZOOKEEPER.md: the rule kept from ephemeral holder nodes).
func (e *Engine) checkTTL(ttl time.Duration) error {
	if ttl > e.session {
		return &engine.ArgumentError{Arg: "ttl", Reason: fmt.Sprintf("%v is longer than the ZooKeeper session timeout %v (a lease ttl may not exceed the session timeout the ensemble granted)", ttl, e.session)}
	}
	return nil
}
