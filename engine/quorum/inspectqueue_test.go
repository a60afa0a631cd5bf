package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestInspectListsTheCountedQueue: Inspect's Waiters is the most waiters a
// majority of the nodes count, and its Queue a list of a node that counts
// that many, so they agree while a waiter's entry has reached some nodes
// only; among the nodes that count that many, the list is the order most
// of them have. An entry on one node of three is neither counted nor
// listed (an attempt a majority decides meanwhile need not be behind it:
// the conformance case SharedWaiterGivesUp saw a reader granted past a
// writer Inspect counted from one node); on two it is. Before the count
// was the most any node had; before that the list was the first holding
// node's ("1 waiters counted, listed []").
func TestInspectListsTheCountedQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mems := threeMems(t)
	q := memQuorumOf(t, mems)
	const name = "counted-queue"
	if g, err := q.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "h", Attempt: "h", TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	// A waiter's entry that reached node 1 only (its attempt's requests
	// to nodes 0 and 2 still on their way).
	req := engine.AcquireRequest{Name: name, Owner: "w", Attempt: "w", OneOff: true, TTL: time.Minute, Waiter: "w-entry", WaiterTTL: 30 * time.Second}
	if g, err := mems[1].Acquire(ctx, req); err != nil || g.Acquired || !g.Queued {
		t.Fatalf("the waiter on node 1: %+v, %v; want queued", g, err)
	}
	info, err := q.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Owner != "h" {
		t.Fatalf("Inspect: %+v, want held by h", info)
	}
	if info.Waiters != 0 || len(info.Queue) != 0 {
		t.Fatalf("Inspect: %d waiters counted, listed %+v; want none: one node of three has the entry", info.Waiters, info.Queue)
	}
	enter := func(i int, waiter string) {
		t.Helper()
		r := req
		r.Owner, r.Attempt, r.Waiter = waiter, waiter, waiter+"-entry"
		if g, err := mems[i].Acquire(ctx, r); err != nil || g.Acquired || !g.Queued {
			t.Fatalf("%s on node %d: %+v, %v; want queued", waiter, i, g, err)
		}
	}

	// A second waiter on node 0, which then has the first too: each node
	// of a majority (0 and 1) counts w-entry, and node 1 lists it alone.
	enter(0, "v")
	enter(0, "w")
	info, err = q.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Waiters != 1 || len(info.Queue) != 1 || info.Queue[0].ID != "w-entry" {
		t.Fatalf("Inspect: %d waiters counted, listed %+v; want w-entry counted and listed", info.Waiters, info.Queue)
	}

	// Every node has both now, node 0 (the straggler for the first) in
	// another order: the list is the order most nodes have.
	enter(2, "w")
	enter(1, "v")
	enter(2, "v")
	info, err = q.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Waiters != 2 || len(info.Queue) != 2 || info.Queue[0].ID != "w-entry" || info.Queue[1].ID != "v-entry" {
		t.Fatalf("Inspect: %d waiters counted, listed %+v; want w-entry then v-entry, the order of nodes 1 and 2", info.Waiters, info.Queue)
	}
}
