package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// TestExtendAfterPartialForceRelease: a holder granted on three nodes of
// five (two never had the grant: their answers timed out), force-released
// on two of the three (the third missed the force-release), asks to renew.
// The nodes answer: one extended, two taken over (the force-release's
// marks), two missing (they never had it). A majority says the owner does
// not hold the lock, and the two that know why say it was taken over:
// that is the answer, not "missing" (which the holder reports as an
// expiry), since the missing nodes know nothing of the lock at all.
func TestExtendAfterPartialForceRelease(t *testing.T) {
	ctx := context.Background()
	mems := make([]*memory.Engine, 5)
	nodes := make([]engine.Engine, 5)
	for i := range mems {
		mems[i] = memory.New()
		nodes[i] = mems[i]
	}
	q, err := quorum.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const name, owner = "partial-force-release", "holder"
	req := engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: 20 * time.Second}
	for _, m := range mems[:3] {
		if g, err := m.Acquire(ctx, req); err != nil || !g.Acquired {
			t.Fatalf("grant on a node: %+v, %v", g, err)
		}
	}
	for _, m := range mems[:2] {
		if held, err := m.ForceRelease(ctx, name); err != nil || !held {
			t.Fatalf("force-release on a node: %v, %v", held, err)
		}
	}
	// The quorum decides on the first majority of answers, in whatever
	// order the nodes answer: renew several times.
	for range 20 {
		rs, err := q.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: owner, TTL: 20 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rs[0]; got.Err != nil || got.Status != engine.HeldByOther {
			t.Fatalf("renewal after a partial force-release: %+v, want status HeldByOther (taken over)", got)
		}
	}
}
