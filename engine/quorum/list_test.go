package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestListSharedMajority: List reports the holders of a shared lock that a
// majority of the nodes list, as Inspect does: with the writer
// granted on three nodes of five and a reader (a grant that lost) on the
// first two, the listing shows the writer and not the reader. Found by the
// randomized checker (enginetest.Check): List took the holders of the
// first node that listed the name, here the reader alone.
func TestListSharedMajority(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := newMemNodes(t, 5)
	q := memQuorum(t, nodes)
	req := func(owner string, weight int) engine.AcquireRequest {
		return engine.AcquireRequest{Name: "rw", Owner: owner, TTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: weight}
	}
	for i, n := range nodes {
		r := req("writer", engine.RWPermits)
		if i < 2 {
			r = req("reader", 1)
		}
		if g, err := n.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("node %d: %+v, %v", i, g, err)
		}
	}
	for range 5 {
		infos, _, err := q.List(ctx, "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || len(infos[0].Holders) != 1 || infos[0].Holders[0].Owner != "writer" {
			t.Fatalf("List: %+v, want the writer alone", infos)
		}
	}
	info, err := q.Inspect(ctx, "rw")
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != "writer" {
		t.Fatalf("Inspect: %+v, %v, want the writer alone", info, err)
	}
}
