package zookeeper_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// rollingRestart: every member is restarted in turn (killed, started
// again on its data, serving again before the next) while a lock is held
// and two clients wait. Never two holders; the waiters are granted after
// the holder's release, with tokens above its. The holder keeps its lease
// unless it truly could not be proven: it renews while each member is
// down, and a loss it is told is a failure unless the ensemble answered
// no write (a probe writes every 100 ms) for half its ttl or more (the
// loss then may be true: its last renewals were not answered).
func rollingRestart(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitServing(t, ens, 2*time.Minute) // the fault before is over
	name := "rolling-restart"
	const ttl = 10 * time.Second
	occ := newOccupancy(t, name, 1, true)
	holder := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = holder.Close() })
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	occ.enter(h, 1)
	var wg sync.WaitGroup
	for range 2 {
		c := distlock.New(dial(t, ens.Servers()))
		t.Cleanup(func() { _ = c.Close() })
		wg.Go(func() {
			l, err := c.Acquire(ctx, name, distlock.WithTTL(ttl))
			if err != nil {
				t.Errorf("a waiter: %v", err)
				return
			}
			occ.enter(l, 1)
			occ.leave(l)
			_ = l.Release(ctx)
		})
	}
	waitUntil(t, 20*time.Second, "both waiters to queue", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 2
	})
	gap := probeWrites(t, ens)
	for _, m := range ens.Members {
		m.Kill()
		// The holder renews while the member is down: a renewal that
		// meets the broken connection (or the election, when the member
		// led) fails and is sent again, and must not be taken for a loss.
		waitUntil(t, 30*time.Second, "a renewal with a member down", func() bool {
			err := h.Extend(ctx, ttl)
			return err == nil || errors.Is(err, distlock.ErrLeaseLost) || errors.Is(err, distlock.ErrNotHeld)
		})
		m.Restart()
		ens.WaitReady(60 * time.Second)
	}
	longest := gap()
	t.Logf("longest time without an answered write: %v (ttl %v)", longest, ttl)
	if err := h.Err(); err != nil && longest < ttl/2 {
		t.Errorf("the holder was told %v though the ensemble answered writes at most %v apart (ttl %v)", err, longest, ttl)
	}
	occ.leave(h)
	_ = h.Release(ctx)
	wg.Wait()
	if n := occ.grants(); n != 3 {
		t.Fatalf("%d grants, want the holder's and both waiters'", n)
	}
}

// probeWrites writes to the ensemble every 100 ms (Inspect writes the
// root's data to read the ensemble's clock) from a client of every member,
// until the test ends; the function it returns stops it and reports the
// longest time between two answered writes.
func probeWrites(t *testing.T, ens *zktest.Ensemble) func() time.Duration {
	c := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		last    = time.Now()
		longest time.Duration
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			_, err := c.Inspect(cctx, "probe")
			ccancel()
			if err == nil {
				mu.Lock()
				longest = max(longest, time.Since(last))
				last = time.Now()
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return func() time.Duration {
		stop()
		mu.Lock()
		defer mu.Unlock()
		return max(longest, time.Since(last))
	}
}
