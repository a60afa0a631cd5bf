package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestSharedReleaseOfRemnantNotReleased: a release by the owner of a read
// hold that is left on one node only (the straggler of its earlier
// release, which another engine's release overtakes) while a writer holds
// the other two is answered as the writer's lock, not Released: one node's
// late hold is not the owner's lock, as for a mutex (releaseOutcome). The
// release still drops the leftover hold on the node that had it. Answered
// Released when any node released, a second release looked like the
// release of a lock its owner did not hold (conformance RWUpgradeRefused
// on embedded nodes, SAFETY 109).
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
	enginetest.WaitFor(t, 10*time.Second, "the leftover read hold dropped on the third node", func() bool {
		info, err := nodes[2].Inspect(ctx, name)
		return err == nil && len(info.Holders) == 0
	})
	info, err := q.Inspect(ctx, name)
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != "writer" {
		t.Fatalf("after the remnant's release: %+v, %v; want the writer holding", info, err)
	}
}
