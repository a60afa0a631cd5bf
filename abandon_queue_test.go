package distlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestAbandonedGrantLeavesNoWaiter: a queued waiter is woken and granted,
// but the grant's reply reaches its Client only after the caller gave up
// (its wait has left the queue, finding nothing: the grant took the entry
// out). The Client undoes the late grant, and an undo puts the waiter back
// in its queue place (so that a quorum's minority grant costs no place);
// once the Client has settled it, the waiter that gave up is not queued,
// and the name is free with nobody waiting. Before, the entry stayed at the
// head until its heartbeat deadline, the lock kept for a waiter that was
// gone.
func TestAbandonedGrantLeavesNoWaiter(t *testing.T) {
	for _, kind := range []string{"mutex", "semaphore", "writer"} {
		t.Run(kind, func(t *testing.T) { abandonedGrantLeavesNoWaiter(t, kind) })
	}
}

func abandonedGrantLeavesNoWaiter(t *testing.T, kind string) {
	srv := redistest.Start(t)
	newEngine := func() *redisengine.Engine {
		e, err := redisengine.New(srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	holder := distlock.New(newEngine())
	t.Cleanup(func() { _ = holder.Close() })
	late := &lateGrants{Engine: newEngine(), held: make(chan struct{}), gate: make(chan struct{})}
	waiter := distlock.New(late)
	t.Cleanup(func() { late.open(); _ = waiter.Close() }) // a failed test's held reply
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	acquire := func(ctx context.Context, c *distlock.Client, opts ...distlock.Option) (*distlock.Lease, error) {
		switch kind {
		case "semaphore":
			return c.Semaphore("q", 1).Acquire(ctx, opts...)
		case "writer":
			return c.RWMutex("q").Lock(ctx, opts...)
		}
		return c.Acquire(ctx, "q", opts...)
	}
	l, err := acquire(ctx, holder, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	gave := make(chan error, 1)
	go func() {
		_, err := acquire(wctx, waiter, distlock.WithFair())
		gave <- err
	}()
	for {
		if info, err := holder.Inspect(ctx, "q"); err == nil && info.Waiters == 1 {
			break
		}
		select {
		case err := <-gave:
			t.Fatalf("the waiter returned before it queued: %v", err)
		case <-ctx.Done():
			t.Fatal("the waiter did not queue")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-late.held: // granted in Redis; the reply held back
	case err := <-gave:
		t.Fatalf("the waiter returned before its grant: %v", err)
	case <-ctx.Done():
		t.Fatal("the waiter was not granted")
	}
	giveUp()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter that gave up: %v, want context.Canceled", err)
	}
	late.open()
	// Close waits for the late reply's settling (the undo, and the Leave
	// after it).
	if err := waiter.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := holder.Inspect(ctx, "q")
	if err != nil || info.Held || info.Waiters != 0 {
		t.Fatalf("after the late grant was settled: %+v, %v; want free with nobody waiting", info, err)
	}
}

// lateGrants holds back the reply of the first acquire of a queued waiter
// it sees granted (held closed) until gate is closed: the request ran in
// Redis, its reply comes late.
type lateGrants struct {
	*redisengine.Engine
	held, gate chan struct{}
	once       atomic.Bool
	opened     sync.Once
}

// open lets the held-back reply go (once; again is nothing).
func (e *lateGrants) open() { e.opened.Do(func() { close(e.gate) }) }

func (e *lateGrants) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := e.Engine.Acquire(ctx, r)
	if err == nil && g.Acquired && r.Waiter != "" && e.once.CompareAndSwap(false, true) {
		close(e.held)
		<-e.gate
	}
	return g, err
}
