package distlock_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// These tests run on a fake clock (testing/synctest): renewals and the
// watchdog's idle linger pass without sleeping, and synctest.Wait returns
// once every goroutine of the bubble has exited or is blocked, so a
// goroutine count taken then is final, not a guess after a pause.

// goroutinesAtMost fails the test when more than n goroutines run, with
// their stacks.
func goroutinesAtMost(t *testing.T, n int, what string) {
	t.Helper()
	synctest.Wait()
	if got := runtime.NumGoroutine(); got > n {
		buf := make([]byte, 1<<16)
		t.Fatalf("%s: %d goroutines, want at most %d:\n%s", what, got, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestNoGoroutineOutlivesClient: the watchdog and waiters end with their
// leases and the Client; Close releases every lease.
func TestNoGoroutineOutlivesClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		eng := memory.New()
		c := distlock.New(eng)
		ctx := context.Background()
		var leases []*distlock.Lease
		for i := range 20 {
			l, err := c.Acquire(ctx, "g"+string(rune('a'+i)), distlock.WithTTL(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, l)
		}
		// A waiter that gives up, after a few renewals of the leases.
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _ = c.Acquire(wctx, "ga")
		cancel()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			if l.Err() != distlock.ErrReleased {
				t.Fatalf("lease after Close: %v", l.Err())
			}
		}
		goroutinesAtMost(t, before, "after Close")
		if info, _ := distlock.New(eng).Inspect(ctx, "ga"); info.Held {
			t.Fatalf("Close left a lock held: %+v", info)
		}
	})
}

// TestWatchdogStopsWithLastLease: no goroutine keeps running once the last
// auto-renewed lease is released, even with the Client open: the watchdog
// exits after lingering idle (for well under a second).
func TestWatchdogStopsWithLastLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		c := distlock.New(memory.New())
		defer c.Close()
		ctx := context.Background()
		l, err := c.Acquire(ctx, "w", distlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // two renewals
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // past the watchdog's linger
		goroutinesAtMost(t, before, "a second after the last lease was released")
	})
}
