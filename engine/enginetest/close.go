package enginetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// closeWakesWaiters: Close ends the Acquire and Do calls that wait on the
// Client at once, with ErrClosed (not the context's deadline), and the
// Client sends nothing to the engine after Close returned: when the lock is
// released afterwards, nobody of the closed Client takes it, and it is free.
func (s *suite) closeWakesWaiters(t *testing.T) {
	wrapped, eng := countCalls(s.h.New(t))
	c := distlock.New(wrapped)
	defer c.Close()
	other, third := s.client(t), s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	own, err := c.Acquire(ctx, name+"-own")
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}

	const waiters = 5
	wctx := ctxTimeout(t, 20*time.Second)
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				errs <- c.Do(wctx, name, func(context.Context) error { return nil })
				return
			}
			l, err := c.Acquire(wctx, name)
			if err == nil {
				_ = l.Release(ctx)
				err = errors.New("granted")
			}
			errs <- err
		}()
	}
	// The Client's waiting goroutine is subscribed on the backend (the
	// others queue behind it in the Client).
	WaitFor(t, 20*time.Second, "a waiter on the backend", func() bool {
		info, err := other.Inspect(ctx, name)
		return err == nil && info.Waiters > 0
	})

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	after := eng.calls.Load()
	// The waiters' own context ends 20s on: they must end with ErrClosed
	// before that.
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, distlock.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Fatalf("a waiter after Close: %v, want ErrClosed alone", err)
		}
	}
	if !errors.Is(own.Err(), distlock.ErrReleased) {
		t.Fatalf("own lease after Close: %v", own.Err())
	}
	if _, err := c.Acquire(ctx, name); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}

	// Release the lock: the closed Client must not take it, nor hold
	// anything. (Its waiters left the queue; one whose last attempt was
	// cut short by Close may still have entered it, if its Leave overtook
	// that attempt: then the entry lapses like a dead waiter's.)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := third.Inspect(ctx, name); err != nil || info.Held {
		// Whose grant it is: the closed Client's attempts, by their times
		// from Close's return.
		for _, a := range eng.acquiresLog() {
			t.Logf("closed Client's attempt: owner %s waiter %q sent %v answered %v after Close: %+v, %v",
				a.owner, a.waiter, a.sent.Sub(closed), a.answered.Sub(closed), a.grant, a.err)
		}
		t.Fatalf("the lock after the closed Client's waiters: %+v, %v (%d engine calls since Close returned)", info, err, eng.calls.Load()-after)
	}
	var l *distlock.Lease
	WaitFor(t, distlock.WaiterTTL+10*time.Second, "the lock to be free for another Client", func() bool {
		l, err = third.TryAcquire(ctx, name)
		return err == nil
	})
	_ = l.Release(ctx)
	if n := eng.calls.Load() - after; n != 0 {
		t.Fatalf("%d engine calls after Close returned", n)
	}
}
