package zookeeper_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// sharedLeaderKilled: the leader is killed while a semaphore (limit 2)
// has two holders and two waiters, and an RW lock has two readers, a
// writer waiting and a reader behind it; the holders release at once,
// while the others elect a leader. Every release succeeds (sent again
// until a member of the new quorum answers), never more permits in use
// than the limit (a writer never beside a reader), every waiter is
// granted, and no permit is lost: the waiters are granted long before the
// holders' ttl (a minute) would free a permit left behind, and at the end
// the whole limit can be taken at once (two permits of the semaphore, the
// RW lock's writer).
func sharedLeaderKilled(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitServing(t, ens, 2*time.Minute) // the fault before is over
	const limit = 2
	sem := newOccupancy(t, "shared-leader-killed-sem", limit, false)
	rw := newOccupancy(t, "shared-leader-killed-rw", engine.RWPermits, false)
	// Releases are sent during the failover: they may take until the
	// clients connect to a member of the new quorum.
	newClient := func() *distlock.Client {
		c := distlock.New(dial(t, ens.Servers()), distlock.WithReleaseTimeout(30*time.Second))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ttl := distlock.WithTTL(10 * time.Second)
	// The first holders' ttl is long: a permit their release would leave
	// behind keeps the waiters waiting past the bound below.
	long := distlock.WithTTL(time.Minute)
	type grant func(*distlock.Client, distlock.Option) (*distlock.Lease, error)
	semAcquire := func(c *distlock.Client, ttl distlock.Option) (*distlock.Lease, error) {
		return c.Semaphore(sem.name, limit).Acquire(ctx, ttl)
	}
	rLock := func(c *distlock.Client, ttl distlock.Option) (*distlock.Lease, error) {
		return c.RWMutex(rw.name).RLock(ctx, ttl)
	}
	wLock := func(c *distlock.Client, ttl distlock.Option) (*distlock.Lease, error) {
		return c.RWMutex(rw.name).Lock(ctx, ttl)
	}
	// Two holders of each.
	var held []*distlock.Lease
	for _, g := range []struct {
		occ    *occupancy
		take   grant
		weight int
	}{{sem, semAcquire, 1}, {sem, semAcquire, 1}, {rw, rLock, 1}, {rw, rLock, 1}} {
		l, err := g.take(newClient(), long)
		if err != nil {
			t.Fatal(err)
		}
		g.occ.enter(l, g.weight)
		held = append(held, l)
	}
	// The waiters, each entering when granted and leaving at once.
	var wg sync.WaitGroup
	wait := func(occ *occupancy, take grant, weight int) {
		c := newClient()
		wg.Go(func() {
			l, err := take(c, ttl)
			if err != nil {
				t.Errorf("%s: a waiter: %v", occ.name, err)
				return
			}
			occ.enter(l, weight)
			occ.leave(l)
			if err := l.Release(ctx); err != nil {
				t.Logf("%s: a waiter's release: %v", occ.name, err)
			}
		})
	}
	inspector := newClient()
	waiters := func(occ *occupancy, n int) func() bool {
		return func() bool {
			info, err := inspector.Semaphore(occ.name, limit).Inspect(ctx) // a shared lock's inspection, of either kind
			return err == nil && info.Waiters == n
		}
	}
	wait(sem, semAcquire, 1)
	wait(sem, semAcquire, 1)
	waitUntil(t, 20*time.Second, "two semaphore waiters", waiters(sem, 2))
	wait(rw, wLock, engine.RWPermits)
	waitUntil(t, 20*time.Second, "the writer to queue", waiters(rw, 1))
	wait(rw, rLock, 1)
	waitUntil(t, 20*time.Second, "the reader behind the writer", waiters(rw, 2))

	leader := leaderOf(t, ens)
	leader.Kill()
	t.Cleanup(func() { leader.Restart(); ens.WaitReady(60 * time.Second) })
	for i, l := range held {
		[]*occupancy{sem, sem, rw, rw}[i].leave(l)
		if err := l.Release(ctx); err != nil {
			t.Errorf("a holder's release during the failover: %v", err)
		}
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("waiters not granted 30s after every holder released: a permit was left behind")
	}
	if n := sem.grants() + rw.grants(); n != 8 {
		t.Fatalf("%d grants, want the 4 holders' and the 4 waiters'", n)
	}
	// No permit lost: the whole limit at once, with no wait. The new
	// session's member may lag the releases just answered to others (a
	// follower serves reads from before them): a write first (Inspect
	// writes the root's data) makes its later reads current.
	c := newClient()
	if _, err := c.Semaphore(sem.name, limit).Inspect(ctx); err != nil {
		t.Fatal(err)
	}
	for range limit {
		l, err := c.Semaphore(sem.name, limit).TryAcquire(ctx, ttl)
		if err != nil {
			info, ierr := c.Semaphore(sem.name, limit).Inspect(ctx)
			t.Fatalf("a semaphore permit after every holder left: %v (%+v %v)", err, info, ierr)
		}
		defer l.Release(ctx)
	}
	l, err := c.RWMutex(rw.name).TryLock(ctx, ttl)
	if err != nil {
		t.Fatalf("the writer after every holder left: %v", err)
	}
	_ = l.Release(ctx)
}
