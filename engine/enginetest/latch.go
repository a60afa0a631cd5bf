package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// Latch runs the countdown latch's cases on an engine that keeps latches
// (engine.Latcher), with two Clients on engines from h.New: waiters of
// one Client return only once the count is zero, and then all of them
// (woken by notification: Wait does not poll, so a missed wake-up leaves
// a waiter waiting past the bound); TrySetCount sets only a latch at
// zero; CountDown at zero does nothing; a resent CountDown (same id)
// counts once; bad input and a context's end are typed errors. Each
// engine runs it in its own package (the root package's TestLatch for the
// embedded engine and Redis).
func Latch(t *testing.T, h Harness) {
	t.Helper()
	eng := h.New(t)
	a := distlock.New(eng)
	defer a.Close()
	b := distlock.New(h.New(t))
	defer b.Close()
	ctx := context.Background()
	l := a.CountDownLatch("batch")
	var ae *distlock.ArgumentError
	if _, err := l.TrySetCount(ctx, 0); !errors.As(err, &ae) {
		t.Fatalf("TrySetCount(0): %v, want an *ArgumentError", err)
	}
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait on a latch never set: %v, want nil at once", err)
	}
	if set, err := l.TrySetCount(ctx, 3); !set || err != nil {
		t.Fatal(set, err)
	}
	if set, err := l.TrySetCount(ctx, 5); set || err != nil {
		t.Fatalf("TrySetCount on a counting latch: %v %v, want false", set, err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	waited := make(chan error, 2)
	for range 2 {
		go func() {
			err := b.CountDownLatch("batch").Wait(wctx)
			if n, cerr := b.CountDownLatch("batch").Count(ctx); err == nil && (n != 0 || cerr != nil) {
				err = fmt.Errorf("Wait returned with the count at %d (%v)", n, cerr)
			}
			waited <- err
		}()
	}
	// A resent copy of one call counts once.
	lt := eng.(engine.Latcher)
	for range 2 {
		if n, err := lt.CountDown(ctx, "batch", "call-1"); n != 2 || err != nil {
			t.Fatalf("CountDown call-1: %d %v, want 2", n, err)
		}
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Count(ctx); n != 1 || err != nil {
		t.Fatalf("Count %d %v, want 1", n, err)
	}
	select {
	case err := <-waited:
		t.Fatalf("a waiter returned with the count at 1: %v", err)
	default:
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-waited:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			stop()
			t.Fatal("a waiter still waits 30s after the count reached zero: not woken")
		}
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Count(ctx); n != 0 || err != nil {
		t.Fatalf("Count after a CountDown at zero: %d %v, want 0", n, err)
	}
	if set, err := l.TrySetCount(ctx, 1); !set || err != nil {
		t.Fatalf("TrySetCount after zero: %v %v, want set again", set, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	var we *distlock.WaitError
	if err := l.Wait(dctx); !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its context: %v, want a *WaitError for the deadline", err)
	}
	if err := l.CountDown(ctx); err != nil { // nothing left counting
		t.Fatal(err)
	}
}
