package quorum_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
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

// TestListDescribesAsInspect: List describes a held lock as Inspect does,
// from what a majority of the nodes confirm: a mutex whose metadata (an
// election's proclaimed value) and re-entry reached two nodes of three
// but not the first is listed with the new value and two holds, not with
// the first node's. List took the first node's entry whole, so a value
// that missed that node was never listed until the next grant (the
// conformance case AdminElectionAndLatch timed out on it under load).
func TestListDescribesAsInspect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := newMemNodes(t, 3)
	q := memQuorum(t, nodes)
	r := engine.AcquireRequest{Name: "m", Owner: "o", Attempt: "first", TTL: time.Minute, Metadata: "old"}
	g, err := q.Acquire(ctx, r)
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire: %+v, %v", g, err)
	}
	for i, n := range nodes {
		// The grant's answer from a node may still be out when Acquire returns.
		enginetest.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d to hold the grant", i), func() bool {
			info, err := n.Inspect(ctx, "m")
			return err == nil && info.Held && info.Owner == "o" && info.Token == g.Token
		})
	}
	// The value and the re-entry reach nodes 1 and 2 only.
	r.Attempt = "second"
	for _, n := range nodes[1:] {
		if st, err := n.SetMetadata(ctx, engine.MetadataRequest{Name: "m", Owner: "o", Metadata: "new"}); err != nil || st != engine.Extended {
			t.Fatalf("SetMetadata: %v, %v", st, err)
		}
		if g, err := n.Acquire(ctx, r); err != nil || !g.Acquired || g.Count != 2 {
			t.Fatalf("re-entry: %+v, %v", g, err)
		}
	}
	want, err := q.Inspect(ctx, "m")
	if err != nil || want.Metadata != "new" || want.Count != 2 {
		t.Fatalf("Inspect: %+v, %v; want the value and the holds of nodes 1 and 2", want, err)
	}
	infos, _, err := q.List(ctx, "", "", 100)
	if err != nil || len(infos) != 1 {
		t.Fatalf("List: %+v, %v", infos, err)
	}
	got := infos[0]
	if got.Name != want.Name || !got.Held || got.Owner != want.Owner || got.Token != want.Token ||
		got.Metadata != want.Metadata || got.Count != want.Count || got.Kind != want.Kind {
		t.Fatalf("List describes %+v, Inspect %+v", got, want)
	}
}
