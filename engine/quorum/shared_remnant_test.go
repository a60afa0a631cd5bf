package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestSharedReleaseOfRemnantNotReleased: a release by the owner of a read
// hold that is left on one node only (the straggler of its earlier
// release, which another engine's release overtakes) while a writer holds
// the other two is answered as the writer's lock, not Released: one node's
// late hold is not the owner's lock, as for a mutex (releaseOutcome).
// Before the fix a quorum answered Released when any node did (Q67's
// RWUpgradeRefused failure on embedded nodes), so a double release looked
// like a release of a lock the owner did not hold.
func TestSharedReleaseOfRemnantNotReleased(t *testing.T) {
	nodes := newMemNodes(t, 3)
	q := memQuorum(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name = "remnant"
	grant := func(i int, owner string, weight int) {
		t.Helper()
		g, err := nodes[i].Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, TTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: weight})
		if err != nil || !g.Acquired {
			t.Fatalf("node %d: %s's grant: %+v, %v", i, owner, g, err)
		}
	}
	grant(0, "writer", engine.RWPermits)
	grant(1, "writer", engine.RWPermits)
	grant(2, "reader", 1)

	res, err := q.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "reader", Kind: engine.RWLock})
	if err != nil || res.Status == engine.Released {
		t.Fatalf("the release of a read hold left on one node: %+v, %v; want not held", res, err)
	}
	info, err := q.Inspect(ctx, name)
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != "writer" {
		t.Fatalf("after the remnant's release: %+v, %v; want the writer holding", info, err)
	}
}
