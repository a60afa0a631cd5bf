// Package distlock gives Go programs distributed locks they can trust: leases
// that renew themselves and tell their holder the moment ownership can no
// longer be proven, fencing tokens on every grant, and waiting by
// notification rather than polling.
//
// A Client runs on an engine, one lock authority: engine/memory inside one
// process, engine/redis on Redis (one node, Sentinel or Cluster),
// engine/quorum for Redlock over independent nodes, engine/etcd,
// engine/postgres, engine/zookeeper, and engine/remote for a distlock
// server. New wraps an engine the caller built; Open builds one from a URL
// (mem://, redis://, redlock://, etcd://, postgres://, zookeeper://,
// distlock://, …) for the engine packages the program imports. The
// semantics are the same on every engine; an engine that lacks a feature
// answers an *UnsupportedError rather than approximating it.
//
// Besides the mutex (Acquire, TryAcquire, Do) and sets of mutexes taken
// together (AcquireAll, TryAcquireAll), a Client hands out semaphores
// (Semaphore), reader-writer locks (RWMutex), leader elections (Campaign,
// Leader) and countdown latches (CountDownLatch), all on the same lock
// model: one name, one record in the engine, one fencing-token sequence.
//
//	client := distlock.New(memory.New())
//	defer client.Close()
//	lease, err := client.Acquire(ctx, "nightly-report")
//	if err != nil { ... }
//	defer lease.Release(ctx)
//	// work under lease.Context(); send lease.Token() along with every write.
//
// See docs/ARCHITECTURE.md for the layers and README.md for the guarantees.
package distlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
	"github.com/distlock/distlock/internal/workpool"
)

// DefaultReleaseTimeout bounds the network work of a release unless
// WithReleaseTimeout says otherwise.
const DefaultReleaseTimeout = 5 * time.Second

// Client hands out leases on one engine. It is safe for concurrent use.
// Several Clients may share one engine (they are then like several processes
// on one Redis). The engine stays its creator's to close, after the Clients.
type Client struct {
	eng            engine.Engine
	ownsEng        bool // Open made eng: Close closes it
	node           string
	releaseTimeout time.Duration
	failureBudget  time.Duration // WithBackendFailureBudget
	renew          *renewer
	owners         *rules.Owners // random owner tokens and attempt ids
	obs            Observer
	// skipValidity turns off the check that a grant arrived within its
	// validity: set only by negative-control tests in this package.
	skipValidity bool
	// inline: the engine answers in this process (Capabilities.Embedded),
	// so a request never outlives its call and needs no settling
	// (sendSettled).
	inline bool

	// closing is cancelled (with cause ErrClosed) by Close: every call in
	// progress runs under a context that ends with it (see begin).
	closing     context.Context
	stopClosing context.CancelCauseFunc

	mu     sync.Mutex
	leases map[*Lease]struct{}
	holds  map[holdKey]map[*Lease]struct{} // the live leases by name and owner (re-entry: coverTTL)
	turns  map[string]*turn                // local turns (engines without a queue)
	queued map[string]int                  // waiters in the engine's queue, by name
	closed bool
	waited recentWaits    // names waited for lately (a waiting Acquire skips its first attempt)
	calls  sync.WaitGroup // Acquire, TryAcquire, Attach calls in progress
	bg     sync.WaitGroup // best-effort clean-ups, and the senders
	// senders carry requests in flight (sendSettled).
	senders *workpool.Pool
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithReleaseTimeout bounds the network work of one release (default 5s).
// Releases never inherit a cancelled context: they run on the caller's
// context values with this timeout instead.
func WithReleaseTimeout(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.releaseTimeout = d
		}
	}
}

// New returns a Client on eng.
func New(eng engine.Engine, opts ...ClientOption) *Client {
	c := &Client{
		eng:            eng,
		releaseTimeout: DefaultReleaseTimeout,
		failureBudget:  DefaultBackendFailureBudget,
		leases:         make(map[*Lease]struct{}),
		holds:          make(map[holdKey]map[*Lease]struct{}),
		turns:          make(map[string]*turn),
		queued:         make(map[string]int),
	}
	if s, ok := eng.(fmt.Stringer); ok {
		c.node = s.String()
	}
	c.inline = engine.CapabilitiesOf(eng).Embedded
	for _, o := range opts {
		o(c)
	}
	if c.obs == nil {
		c.obs = nopObserver{}
	}
	c.renew = newRenewer(c)
	c.owners = rules.NewOwners()
	c.closing, c.stopClosing = context.WithCancelCause(context.Background())
	c.senders = workpool.New(c.closing.Done(), &c.bg, senderIdle)
	return c
}

// Info describes a lock as Inspect saw it. It is engine.Info, and like it
// not comparable with == (it holds slices: Holders, Queue): compare the
// fields that matter, or use reflect.DeepEqual in tests.
type Info = engine.Info

// Inspect reports who holds the lock name (Info.Holders lists them), its
// metadata, its time left, its fencing high-water and how many wait for it,
// whatever its kind (a semaphore or a reader-writer lock: Info.Kind,
// Info.Limit, and each holder's weight, as Semaphore.Inspect and
// RWMutex.Inspect report it). It changes nothing.
func (c *Client) Inspect(ctx context.Context, name string) (Info, error) {
	if err := c.check(ctx, name); err != nil {
		return Info{}, err
	}
	info, err := c.eng.Inspect(ctx, name)
	if err != nil {
		return Info{}, c.backendErr(ctx, "inspect", name, err)
	}
	if info.Held && len(info.Holders) == 0 {
		info.Holders = []engine.Holder{{Owner: info.Owner, Count: info.Count, Token: info.Token, TTL: info.TTL, Metadata: info.Metadata, Weight: 1}}
	}
	return info, nil
}

// ForceRelease frees the lock name whoever holds it (every holder of a
// semaphore or a reader-writer lock) and wakes a waiter: an
// administrator's repair for a holder known to be dead. Each holder's
// lease learns of it at its next renewal, lost as TakenOver. It reports
// whether the lock was held.
func (c *Client) ForceRelease(ctx context.Context, name string) (bool, error) {
	if err := c.check(ctx, name); err != nil {
		return false, err
	}
	fr, ok := c.eng.(engine.ForceReleaser)
	if !ok {
		return false, &ArgumentError{Arg: "engine", Reason: "does not support force-release"}
	}
	held, err := fr.ForceRelease(ctx, name)
	if err != nil {
		return false, c.backendErr(ctx, "force-release", name, err)
	}
	return held, nil
}

// ForceReleaseHolder frees only owner's hold of the lock name: one holder
// of a semaphore or a reader-writer lock (its permits come back and the
// head of the queue is woken if it fits; the other holders keep theirs),
// or the mutex when owner holds it. The freed holder's lease learns of it
// at its next renewal, lost as TakenOver. When owner holds nothing of the
// lock it returns a *NotHolderError (matching ErrNotHeld) and changes
// nothing; an empty owner is an *ArgumentError.
func (c *Client) ForceReleaseHolder(ctx context.Context, name, owner string) error {
	if err := c.check(ctx, name); err != nil {
		return err
	}
	if err := ValidateOwner(owner); err != nil {
		return err
	}
	if owner == "" {
		return &ArgumentError{Arg: "owner", Reason: "empty"}
	}
	fr, ok := c.eng.(engine.HolderReleaser)
	if !ok {
		return &ArgumentError{Arg: "engine", Reason: "does not support force-release of one holder"}
	}
	held, err := fr.ForceReleaseHolder(ctx, name, owner)
	if err != nil {
		return c.backendErr(ctx, "force-release", name, err)
	}
	if !held {
		return &NotHolderError{Name: name, Owner: owner}
	}
	return nil
}

// Close ends every Acquire, TryAcquire, Attach and Do call still waiting
// on the Client (they return an error matching ErrClosed), releases every
// lease the Client still holds and stops the watchdog; later calls fail with
// ErrClosed. Leases it released report ErrReleased. When Close returns, the
// Client sends nothing more to the engine. It does not close the engine
// of New; it closes the engine (and its connections) of Open, and returns
// the engine's error. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	// Wake the calls in progress and wait for them: a call that was granted
	// meanwhile finds the Client closed and drops its hold (c.bg).
	c.stopClosing(ErrClosed)
	c.calls.Wait()

	c.mu.Lock()
	leases := make([]*Lease, 0, len(c.leases))
	for l := range c.leases {
		leases = append(leases, l)
	}
	c.mu.Unlock()

	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Release(context.Background())
		}()
	}
	wg.Wait()
	c.renew.close()
	c.bg.Wait()
	if c.ownsEng {
		return c.eng.Close()
	}
	return nil
}

// check validates what every call needs; it changes nothing.
func (c *Client) check(ctx context.Context, name string) error {
	if err := c.checkInput(ctx, name); err != nil {
		return err
	}
	return c.whileOpen(func() {})
}

// begin starts a call that Close waits for (endCall ends it), after the
// checks of check.
func (c *Client) begin(ctx context.Context, name string) error {
	if err := c.checkInput(ctx, name); err != nil {
		return err
	}
	return c.whileOpen(func() { c.calls.Add(1) })
}

// whileOpen runs fn under c.mu unless the Client is closed (ErrClosed).
func (c *Client) whileOpen(fn func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	fn()
	return nil
}

// checkInput checks ctx and name.
func (c *Client) checkInput(ctx context.Context, name string) error {
	if ctx == nil {
		return &ArgumentError{Arg: "context", Reason: "nil"}
	}
	if err := engine.CheckName(c.eng, name); err != nil {
		return argumentFrom(err)
	}
	return nil
}

// endCall ends a call started by begin.
func (c *Client) endCall() { c.calls.Done() }

// closable returns ctx joined with the Client's closing: it ends when ctx
// does or when Close is called (ctxErr then says ErrClosed). A call takes it
// before it waits, so that Close ends the wait at once; a single attempt
// runs on the caller's context, and Close waits for its round trip.
func (c *Client) closable(ctx context.Context) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.closing, func() { cancel(ErrClosed) })
	return cctx, func() {
		stop()
		cancel(nil)
	}
}

// ctxErr is why a call's context (from begin) ended: ErrClosed when Close
// ended it, else the caller's context error; nil while it runs.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		return ErrClosed
	}
	return err
}

// backendErr wraps an engine failure; a failure caused by ctx ending is
// reported as ctx's error (wrapped) so errors.Is(err, context.Canceled)
// holds, or ErrClosed when Close ended the call.
func (c *Client) backendErr(ctx context.Context, op, name string, err error) error {
	if cerr := ctxErr(ctx); cerr != nil {
		return fmt.Errorf("distlock: %s %q: %w", op, name, cerr)
	}
	if isArgument(err) {
		return argumentFrom(err) // refused by a rule of the engine's (a server's)
	}
	return &BackendError{Op: op, Name: name, Node: c.node, Err: err}
}

// track registers a live lease, or reports that the client is closed.
func (c *Client) track(l *Lease) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.leases[l] = struct{}{}
	k := holdKey{l.name, l.owner}
	if c.holds[k] == nil {
		c.holds[k] = make(map[*Lease]struct{})
	}
	c.holds[k][l] = struct{}{}
	return true
}

func (c *Client) forget(l *Lease) {
	c.mu.Lock()
	delete(c.leases, l)
	k := holdKey{l.name, l.owner}
	delete(c.holds[k], l)
	if len(c.holds[k]) == 0 {
		delete(c.holds, k)
	}
	c.mu.Unlock()
	c.renew.remove(l)
}

// releaseContext is the context of a release's network work: ctx's values,
// never its cancellation, bounded by the release timeout.
func (c *Client) releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.releaseTimeout)
}

// cleanup makes release r in the background (dropHold): a grant whose
// outcome was ambiguous (the reply was lost, undo), or a lease ended by its
// hold limit; ttl is the grant's.
func (c *Client) cleanup(r engine.ReleaseRequest, ttl time.Duration) {
	c.inBackground(func() { c.dropHold(r, ttl) })
}

// inBackground runs f on a goroutine of its own, which Close waits for.
func (c *Client) inBackground(f func()) {
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f()
	}()
}

// dropHold makes release r of a hold nobody keeps (a grant whose answer
// came too late or was lost, a lease past its hold limit; ttl is the
// grant's), each try bounded by the release timeout, and makes sure of it.
// The request that made the grant may still sit in a stalled backend's
// socket buffers and run after a release sent meanwhile, which then found
// nothing; so a release that fails is tried again, and a release answered
// "not held" is sent once more, undoSettle after that answer, when the
// backend has run whatever it had buffered before. It stops once a release
// dropped the hold, once that confirmation is answered, after a permanent
// error, once the grant's ttl has passed since the first try with no
// answer (a grant made later lives its ttl: the limit the docs state), and
// when the Client closes (Close waits for the try in flight).
func (c *Client) dropHold(r engine.ReleaseRequest, ttl time.Duration) {
	until := time.Now().Add(max(ttl, c.releaseTimeout))
	pause, answered := undoRetryFirst, false
	for {
		ctx, cancel := c.releaseContext(context.Background())
		res, err := c.eng.Release(ctx, r)
		cancel()
		switch {
		case err == nil && res.Status == engine.Released,
			err == nil && answered, // the confirmation
			err != nil && (isArgument(err) || engine.IsPermanent(c.eng, err)):
			return
		case err == nil:
			answered, pause = true, undoSettle
		case !time.Now().Before(until):
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-c.closing.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !answered {
			pause = min(2*pause, undoRetryMax)
		}
	}
}

// The pauses of dropHold: before its next try after a failed one (doubling
// from undoRetryFirst to undoRetryMax), and before the confirmation of a
// "not held" (undoSettle: a backend that answers has run its buffered
// requests well within it).
const (
	undoRetryFirst = 100 * time.Millisecond
	undoRetryMax   = 2 * time.Second
	undoSettle     = 250 * time.Millisecond
)

// undo is the release of a grant nobody keeps (its reply came too late, or
// was lost): engine.ReleaseRequest.Undo, so that a shared lock it leaves
// empty does not keep the kind the grant gave it.
func undo(name, owner string, kind engine.Kind) engine.ReleaseRequest {
	return engine.ReleaseRequest{Name: name, Owner: owner, Kind: kind, Undo: true}
}

// leaveNow takes a waiter out of the engine's queue, bounded by the
// release timeout and by no caller's context (an entry an abandoned
// attempt made after its wait left: sendSettled).
func (c *Client) leaveNow(r engine.LeaveRequest) {
	q, ok := c.eng.(engine.Queuer)
	if !ok {
		return
	}
	ctx, cancel := c.releaseContext(context.Background())
	defer cancel()
	_ = q.Leave(ctx, r)
}
