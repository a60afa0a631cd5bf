package distlock_test

import (
	"context"
	"runtime"
	"strings"
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

// goroutinesAtMost fails the test when more than n goroutines of the
// calling test's synctest bubble run, with their stacks.
func goroutinesAtMost(t *testing.T, n int, what string) {
	t.Helper()
	synctest.Wait()
	if got, stacks := bubbleGoroutines(); got > n {
		t.Fatalf("%s: %d goroutines, want at most %d:\n%s", what, got, n, stacks)
	}
}

// bubbleGoroutines counts the goroutines of the caller's synctest bubble
// and returns their stacks. runtime.NumGoroutine would count the whole
// process: goroutines of other tests (a client of a stopped server still
// redialling) come and go meanwhile, and are not this test's to judge.
func bubbleGoroutines() (int, string) {
	own := make([]byte, 256)
	own = own[:runtime.Stack(own, false)]
	header, _, _ := strings.Cut(string(own), "\n")
	i := strings.Index(header, "synctest bubble ")
	if i < 0 {
		panic("bubbleGoroutines called outside a synctest bubble: " + header)
	}
	bubble := strings.TrimRight(header[i:], "]:")
	buf := make([]byte, 1<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	var n int
	var ours []string
	for _, g := range strings.Split(all, "\n\n") {
		h, _, _ := strings.Cut(g, "\n")
		if strings.Contains(h, bubble+"]") || strings.Contains(h, bubble+",") {
			n++
			ours = append(ours, g)
		}
	}
	return n, strings.Join(ours, "\n\n")
}

// TestNoGoroutineOutlivesClient: the watchdog and waiters end with their
// leases and the Client; Close releases every lease.
func TestNoGoroutineOutlivesClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, _ := bubbleGoroutines()
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
		before, _ := bubbleGoroutines()
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
