package zookeeper_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// minorityStopped: one member of three, the leader, is paused (SIGSTOP)
// while a lock is held by a client of that member and two clients of the
// others wait. The two running members elect a leader and locking goes
// on: the cut-off holder is told its lease is lost before a waiter is
// granted, both waiters are granted, then more rounds of grants run with
// the member still paused; never two holders, every token above the one
// before.
func minorityStopped(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitServing(t, ens, 2*time.Minute) // the fault before is over
	name := "minority-stopped"
	occ := newOccupancy(t, name, 1, true)
	paused := leaderOf(t, ens)
	var others []string
	for _, m := range ens.Members {
		if m != paused {
			others = append(others, m.Addr)
		}
	}
	holder := distlock.New(dial(t, []string{paused.Addr}))
	t.Cleanup(func() { _ = holder.Close() })
	// A ttl above the time the others take to elect a leader (about 5 s:
	// syncLimit), so that a grant before the ttl would be seen.
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(8*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	occ.enter(h, 1)
	clients := make([]*distlock.Client, 2)
	for i := range clients {
		clients[i] = distlock.New(dial(t, others))
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	// use takes the lock with c, enters, leaves and releases.
	use := func(c *distlock.Client) {
		l, err := c.Acquire(ctx, name, distlock.WithTTL(5*time.Second))
		if err != nil {
			t.Errorf("an attempt with one member paused: %v", err)
			return
		}
		occ.enter(l, 1)
		occ.leave(l)
		if err := l.Release(ctx); err != nil {
			t.Errorf("release with one member paused: %v", err)
		}
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { use(c) })
	}
	waitUntil(t, 20*time.Second, "both waiters to queue", func() bool {
		info, err := clients[0].Inspect(ctx, name)
		return err == nil && info.Waiters == 2
	})
	paused.Stop()
	t.Cleanup(func() { paused.Cont(); ens.WaitReady(60 * time.Second) })
	wg.Wait()
	select {
	case <-h.Done():
	default:
		t.Fatal("the waiters were granted while the cut-off holder holds")
	}
	// Locking goes on with the member still paused.
	for _, c := range clients {
		wg.Go(func() {
			for range 3 {
				use(c)
			}
		})
	}
	wg.Wait()
	if n := occ.grants(); n != 9 {
		t.Fatalf("%d grants, want the holder's, both waiters' and 6 more", n)
	}
}
