package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
)

// TestKindRefusedNotNoQuorum: a mutex asked on a name that a majority of
// the nodes keep as a reader-writer lock with readers is refused with the
// nodes' *engine.ArgumentError itself (the request is wrong), not a
// *NoQuorumError (the nodes answered) nor contention; the nodes that
// granted it are released, so nothing changed.
func TestKindRefusedNotNoQuorum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := newMemNodes(t, 5)
	q := memQuorum(t, nodes)
	// Readers on three of the five nodes: two are free for a mutex.
	for _, n := range nodes[:3] {
		if g, err := n.AcquireShared(ctx, engine.SharedRequest{AcquireRequest: engine.AcquireRequest{Name: "k", Owner: "reader", TTL: time.Minute},
			Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}); err != nil || !g.Acquired {
			t.Fatalf("reader: %+v, %v", g, err)
		}
	}
	want := engine.KindError("k", engine.RWLock, 0).Error()
	for _, oneOff := range []bool{true, false} {
		g, err := q.Acquire(ctx, engine.AcquireRequest{Name: "k", Owner: "m", Attempt: "m", OneOff: oneOff, TTL: time.Minute})
		var ae *engine.ArgumentError
		if g.Acquired || !errors.As(err, &ae) || errors.Is(err, quorum.ErrNoQuorum) || ae.Error() != want {
			t.Fatalf("mutex of a read-locked name (one-off %v): %+v, %v; want only %q", oneOff, g, err, want)
		}
		for i, n := range nodes {
			if !eventually(5*time.Second, func() bool {
				info, err := n.Inspect(ctx, "k")
				return err == nil && !info.Held
			}) {
				t.Fatalf("node %d keeps the refused mutex", i)
			}
			if info, _ := n.InspectShared(ctx, "k"); (i < 3) != info.Held {
				t.Fatalf("node %d after the refusal: %+v", i, info)
			}
		}
	}
}
