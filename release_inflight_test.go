package distlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// heldExtend is an engine whose next Extend, once armed, waits until
// proceed is closed: a renewal kept in flight.
type heldExtend struct {
	engine.Engine
	armed   atomic.Bool
	started chan struct{}
	proceed chan struct{}
	sent    time.Time     // when the held Extend was called
	ttl     time.Duration // the ttl its first request asked for
}

func (e *heldExtend) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if e.armed.CompareAndSwap(true, false) {
		e.sent, e.ttl = time.Now(), rs[0].TTL
		close(e.started)
		<-e.proceed
	}
	return e.Engine.Extend(ctx, rs)
}

// reenterShort has one owner hold "n" twice through c: a lease of a minute
// without renewal, then one of 3 s that the watchdog renews, with eng
// armed to hold that renewal.
func reenterShort(t *testing.T, c *distlock.Client, eng *heldExtend) (long, short *distlock.Lease) {
	t.Helper()
	ctx := context.Background()
	owner := distlock.WithOwner("reentrant")
	long, err := c.Acquire(ctx, "n", owner, distlock.WithTTL(time.Minute), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	eng.armed.Store(true)
	short, err = c.Acquire(ctx, "n", owner, distlock.WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return long, short
}

// TestReleaseAwaitsRenewalInFlight: a re-entered hold released while its
// watchdog's renewal is in flight does not let that renewal land after the
// release, where the lock service would take its short ttl as the lone
// remaining hold's and cut the lock short under the other lease (found by
// the conformance suite's ShortReentryRenewed on a loaded machine:
// another owner took the lock while the long lease had 28.7 s left).
func TestReleaseAwaitsRenewalInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		defer mem.Close()
		eng := &heldExtend{Engine: mem, started: make(chan struct{}), proceed: make(chan struct{})}
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		long, short := reenterShort(t, c, eng)
		<-eng.started // the watchdog's renewal of the short hold is in flight
		released := make(chan error, 1)
		go func() { released <- short.Release(ctx) }()
		synctest.Wait()
		close(eng.proceed)
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the renewal, answered, is applied
		info, err := c.Inspect(ctx, "n")
		if err != nil {
			t.Fatal(err)
		}
		if !info.Held || info.Count != 1 || info.TTL < time.Until(long.Deadline()) {
			t.Fatalf("after the short hold's release: held %v, count %d, ttl %v; the long lease has %v left",
				info.Held, info.Count, info.TTL, time.Until(long.Deadline()))
		}
	})
}

// TestLateRenewalCoversOtherHolds: a renewal of a re-entered hold whose
// answer never came (the lock service applies it after the Client gave up
// on it and released the hold) asks for enough ttl that it cannot cut the
// lock short under the owner's other lease (coverTTL). Found as
// ShortReentryRenewed failing on PostgreSQL at load 12, after the release
// had waited for the renewals it could see.
func TestLateRenewalCoversOtherHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		defer mem.Close()
		eng := &heldExtend{Engine: mem, started: make(chan struct{}), proceed: make(chan struct{})}
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		long, short := reenterShort(t, c, eng)
		<-eng.started // the renewal is sent; the lock service will apply it late
		if need := long.Deadline().Sub(eng.sent); eng.ttl < need {
			t.Errorf("the short hold's renewal asked for %v; the long lease needed %v from its send", eng.ttl, need)
		}
		_ = short.Release(ctx)
		if info, err := mem.Inspect(ctx, "n"); err != nil || info.Count != 1 {
			t.Fatalf("the short hold's release was not applied: %+v, %v", info, err)
		}
		close(eng.proceed) // the renewal lands now, after the release
		synctest.Wait()
		info, err := c.Inspect(ctx, "n")
		if err != nil {
			t.Fatal(err)
		}
		if !info.Held || info.TTL < time.Until(long.Deadline()) {
			t.Fatalf("after the late renewal: held %v, ttl %v; the long lease has %v left",
				info.Held, info.TTL, time.Until(long.Deadline()))
		}
	})
}
