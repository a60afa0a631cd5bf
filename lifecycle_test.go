package distlock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// TestNoGoroutineOutlivesClient: the watchdog and waiters end with their
// leases and the Client; Close releases every lease.
func TestNoGoroutineOutlivesClient(t *testing.T) {
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
	// A waiter that gives up.
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
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
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
	if info, _ := distlock.New(eng).Inspect(ctx, "ga"); info.Held {
		t.Fatalf("Close left a lock held: %+v", info)
	}
}

// TestWatchdogStopsWithLastLease: no goroutine keeps running once the last
// auto-renewed lease is released, even with the Client open.
func TestWatchdogStopsWithLastLease(t *testing.T) {
	before := runtime.NumGoroutine()
	c := distlock.New(memory.New())
	defer c.Close()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "w", distlock.WithTTL(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("watchdog still running after the last lease: %d > %d goroutines", runtime.NumGoroutine(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
