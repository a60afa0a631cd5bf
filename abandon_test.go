package distlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// lateAcquire is an engine whose Acquire waits for gate. A caller that
// gives up first gets its context's error at once, but its request stays
// on the wire, as on a pipelined Redis connection: the backend runs it
// after the first Release of its owner, the release meant to undo it.
type lateAcquire struct {
	engine.Engine
	entered  chan struct{} // an Acquire waits at the gate
	gate     chan struct{}
	late     sync.WaitGroup
	calls    atomic.Int64
	acquires atomic.Int64
	pass     int64 // Acquire calls let through before the gate
	mu       sync.Mutex
	released map[string]chan struct{} // by owner
}

func newLateAcquire() *lateAcquire {
	return &lateAcquire{Engine: memory.New(), entered: make(chan struct{}, 1), gate: make(chan struct{}), released: map[string]chan struct{}{}}
}

func (e *lateAcquire) releasedCh(owner string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.released[owner]
	if !ok {
		ch = make(chan struct{})
		e.released[owner] = ch
	}
	return ch
}

func (e *lateAcquire) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	e.calls.Add(1)
	if e.acquires.Add(1) <= e.pass {
		return e.Engine.Acquire(ctx, r)
	}
	e.entered <- struct{}{}
	select {
	case <-e.gate:
		return e.Engine.Acquire(ctx, r)
	case <-ctx.Done():
	}
	e.late.Add(1)
	go func() {
		defer e.late.Done()
		<-e.releasedCh(r.Owner)
		_, _ = e.Engine.Acquire(context.Background(), r)
	}()
	return engine.Grant{}, ctx.Err()
}

func (e *lateAcquire) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	e.calls.Add(1)
	ch := e.releasedCh(r.Owner)
	res, err := e.Engine.Release(ctx, r)
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
	return res, err
}

// TestAbandonedAcquireSettled: an acquire whose caller gave up (its context
// ended, or Close ended its wait) while the request was in flight ends the
// call at once, and leaves no grant behind once the request is run: the
// Client undoes a grant after its answer, never before the backend ran the
// request. Close returns only once that is done, and nothing is sent after.
func TestAbandonedAcquireSettled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		closes bool // Close gives up, rather than the context
		want   error
	}{
		{"context", false, context.Canceled},
		{"close", true, distlock.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := newLateAcquire()
			c := distlock.New(eng)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			acquire := c.TryAcquire
			if tc.closes {
				// Close ends a wait (a first attempt it waits for): the
				// first attempt finds the lock held, the next one is the
				// one given up (the holder is gone when it runs).
				eng.pass = 1
				if _, err := eng.Engine.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "other", TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				acquire = func(ctx context.Context, name string, opts ...distlock.Option) (*distlock.Lease, error) {
					return c.Acquire(ctx, name, opts...)
				}
			}
			errs := make(chan error, 1)
			go func() {
				l, err := acquire(ctx, "n")
				if err == nil {
					_ = l.Release(context.Background())
					err = errors.New("granted")
				}
				errs <- err
			}()
			<-eng.entered
			closed := make(chan error, 1)
			if tc.closes {
				go func() { closed <- c.Close() }()
			} else {
				cancel()
			}
			if err := <-errs; !errors.Is(err, tc.want) {
				t.Fatalf("the call given up: %v, want %v", err, tc.want)
			}
			if _, err := eng.Engine.Release(context.Background(), engine.ReleaseRequest{Name: "n", Owner: "other"}); err != nil {
				t.Fatal(err)
			}
			close(eng.gate) // the backend runs the request now
			if !tc.closes {
				closed <- c.Close()
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			after := eng.calls.Load()
			eng.late.Wait()
			info, err := eng.Engine.Inspect(context.Background(), "n")
			if err != nil || info.Held {
				t.Fatalf("the lock after the abandoned acquire ran: %+v, %v", info, err)
			}
			if n := eng.calls.Load() - after; n != 0 {
				t.Fatalf("%d engine calls after Close returned", n)
			}
		})
	}
}

// stalledAcquire is an engine whose Acquire, once armed, answers only when
// its context ends: a backend that stopped answering, behind a client
// library that honours cancellation.
type stalledAcquire struct {
	engine.Engine
	armed   atomic.Bool
	entered chan struct{}
}

func (e *stalledAcquire) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if !e.armed.Load() {
		return e.Engine.Acquire(ctx, r)
	}
	e.entered <- struct{}{}
	<-ctx.Done()
	return engine.Grant{}, ctx.Err()
}

// TestCloseBoundedOnStalledAcquire: Close ends a wait whose attempt is
// stuck on a backend that stopped answering, and returns once that
// request had the release timeout to answer (the fake clock's exact
// instant), not at the wait's own deadline an hour on.
func TestCloseBoundedOnStalledAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const releaseTimeout = 2 * time.Second
		eng := &stalledAcquire{Engine: memory.New(), entered: make(chan struct{}, 1)}
		c := distlock.New(eng, distlock.WithReleaseTimeout(releaseTimeout))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if _, err := eng.Engine.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "other", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 1)
		go func() {
			_, err := c.Acquire(ctx, "n")
			errs <- err
		}()
		// The first attempt finds the lock held; the wait loop's next
		// one, after the holder leaves, is stuck.
		synctest.Wait()
		eng.armed.Store(true)
		if _, err := eng.Engine.Release(ctx, engine.ReleaseRequest{Name: "n", Owner: "other"}); err != nil {
			t.Fatal(err)
		}
		<-eng.entered
		start := time.Now()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > releaseTimeout {
			t.Fatalf("Close took %v, want at most the release timeout %v", took, releaseTimeout)
		}
		if err := <-errs; !errors.Is(err, distlock.ErrClosed) {
			t.Fatalf("the wait after Close: %v, want ErrClosed", err)
		}
	})
}

// lateQueued is the embedded engine answering as over a network (Embedded
// unset, so the Client sends its acquires in flight) whose attempts with a
// waiter id are held until the wait's Leave, then run: a request that
// reaches the backend after the Leave sent behind it (another pooled
// connection, a member that applies it later), which puts the waiter in
// the queue after the waiter left.
type lateQueued struct {
	*memory.Engine
	left     chan struct{} // closed by the first Leave
	leftOnce sync.Once
}

func (e *lateQueued) Capabilities() engine.Capabilities {
	caps := e.Engine.Capabilities()
	caps.Embedded = false
	return caps
}

func (e *lateQueued) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Waiter != "" {
		<-e.left
	}
	return e.Engine.Acquire(context.WithoutCancel(ctx), r)
}

func (e *lateQueued) Leave(ctx context.Context, r engine.LeaveRequest) error {
	err := e.Engine.Leave(ctx, r)
	e.leftOnce.Do(func() { close(e.left) })
	return err
}

// TestAbandonedAttemptLeavesQueue: a waiting Acquire whose caller gave up
// while its attempt was in flight leaves no queue entry behind when that
// attempt reaches the backend after the wait's Leave: the Client leaves
// again once the late answer says the waiter was queued. Without that,
// the entry stays until its heartbeat ttl (WaiterTTL) and, fair, keeps
// every newcomer out meanwhile.
func TestAbandonedAttemptLeavesQueue(t *testing.T) {
	eng := &lateQueued{Engine: memory.New(), left: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := distlock.New(eng)
	defer holder.Close()
	h, err := holder.Acquire(ctx, "n", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	waiter := distlock.New(eng)
	wctx, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if _, err := waiter.Acquire(wctx, "n", distlock.WithFair()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the waiter that gave up: %v, want its deadline", err)
	}
	// The late attempt runs after the Leave; Close waits for its answer
	// and for what the Client does with it.
	if err := waiter.Close(); err != nil {
		t.Fatal(err)
	}
	if info, err := eng.Inspect(ctx, "n"); err != nil || info.Waiters != 0 {
		t.Fatalf("after the waiter gave up and its late attempt ran: %d waiters (%v), want 0", info.Waiters, err)
	}
	_ = h.Release(ctx)
}

// TestAbandonedAcquireRunAfterUndo: an acquire given up on a stalled
// backend whose request runs only after the release meant to undo it (the
// backend had both buffered, and ran them in the other order) leaves no
// grant behind: the Client confirms a "not held" undo with one more
// release once the backend answers. Before, the one release found nothing
// and the late grant stayed, held by nobody, for its whole ttl (seen on a
// redis-server stopped for 12 s).
func TestAbandonedAcquireRunAfterUndo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := newLateAcquire()
		c := distlock.New(eng, distlock.WithReleaseTimeout(time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if l, err := c.TryAcquire(ctx, "n", distlock.WithTTL(time.Hour)); err == nil {
			_ = l.Release(context.Background())
			t.Fatal("granted")
		}
		// The request's flight ends 1 s after the call's deadline; the
		// undo then finds nothing, after which the backend runs the
		// request; the confirmation follows. (The bubble's fake clock:
		// the sleep returns once every goroutine in it is blocked, with
		// the clock moved on, so nothing waits in real time.)
		time.Sleep(time.Minute)
		synctest.Wait()
		eng.late.Wait()
		info, err := eng.Engine.Inspect(context.Background(), "n")
		if err != nil || info.Held {
			t.Fatalf("the lock after the abandoned acquire ran behind its undo: %+v, %v", info, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
