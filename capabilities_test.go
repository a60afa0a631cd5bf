package distlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// coarseEngine is the embedded engine declaring ttl limits like etcd's
// (whole seconds, at least 2 s), to show how the Client fits ttls to them.
type coarseEngine struct{ *memory.Engine }

func (coarseEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{MinTTL: 2 * time.Second, TTLGranularity: time.Second}
}

// TestTTLFittedToEngine: a ttl the engine cannot keep is rounded up to its
// granularity and raised to its minimum, on Acquire and Extend alike, and
// Lease.TTL and Inspect say what was kept (exactly: on a fake clock,
// testing/synctest, no time passes between the grant and Inspect).
func TestTTLFittedToEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		t.Cleanup(func() { _ = mem.Close() })
		c := distlock.New(coarseEngine{mem})
		t.Cleanup(func() { _ = c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, tc := range []struct{ asked, kept time.Duration }{
			{500 * time.Millisecond, 2 * time.Second},
			{2500 * time.Millisecond, 3 * time.Second},
			{4 * time.Second, 4 * time.Second},
		} {
			l, err := c.Acquire(ctx, "fit", distlock.WithTTL(tc.asked), distlock.WithAutoRenew(false))
			if err != nil {
				t.Fatal(err)
			}
			if got := l.TTL(); got != tc.kept {
				t.Errorf("WithTTL(%v): Lease.TTL = %v, want %v", tc.asked, got, tc.kept)
			}
			info, err := c.Inspect(ctx, "fit")
			if err != nil {
				t.Fatal(err)
			}
			if info.TTL != tc.kept {
				t.Errorf("WithTTL(%v): the engine keeps %v, want %v", tc.asked, info.TTL, tc.kept)
			}
			// A fake millisecond between the grant and the extension:
			// the lease ignores an extension sent at the same clock
			// reading as its grant (Lease.confirm keeps the later of
			// two; a known gap, which a fake clock makes certain).
			time.Sleep(time.Millisecond)
			if err := l.Extend(ctx, 1100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if got := l.TTL(); got != 2*time.Second {
				t.Errorf("Extend(1.1s): Lease.TTL = %v, want 2s", got)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Bad input is still refused before any fitting.
		if _, err := c.Acquire(ctx, "fit", distlock.WithTTL(10*time.Millisecond)); err == nil {
			t.Fatal("a ttl under distlock's MinTTL was fitted instead of refused")
		}
	})
}
