package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// TestGrantedWaiterLeavesEveryQueue: a waiter granted on a majority while
// a straggler node still refused it (the holder's release had not reached
// that node yet) is left in that node's queue, where it heads the queue as
// a dead entry: that node's release wakes it instead of the live waiters
// behind it, until its heartbeat deadline. The quorum takes it out of
// every node's queue once the grant is decided.
//
// Found by the conformance Handoff check (a wake-up delivered after the
// release must precede the winning attempt): on three embedded nodes a
// waiter got the lock 3.8s after a release, by its heartbeat once a stale
// head's entry lapsed. It failed before the fix: the entry stayed on the
// straggler for its 30s heartbeat ttl.
func TestGrantedWaiterLeavesEveryQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mems := threeMems(t)
	lateRelease := make(chan struct{})
	holder, err := quorum.New([]engine.Engine{
		&gatedNode{Engine: mems[0]},
		&gatedNode{Engine: mems[1]},
		&gatedNode{Engine: mems[2], release: lateRelease},
	}, quorum.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter := memQuorumOf(t, mems)
	const name = "straggler-queue"
	if g, err := holder.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "h", Attempt: "h", TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	req := engine.AcquireRequest{Name: name, Owner: "w", Attempt: "w", OneOff: true, TTL: time.Minute, Waiter: "w-entry", WaiterTTL: 30 * time.Second}
	if g, err := waiter.Acquire(ctx, req); err != nil || g.Acquired || !g.Queued {
		t.Fatalf("the waiter's first attempt: %+v, %v; want queued", g, err)
	}
	// The release reaches nodes 0 and 1; node 2's waits.
	released := make(chan error, 1)
	go func() {
		_, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "h"})
		released <- err
	}()
	if !eventually(10*time.Second, func() bool {
		a, _ := mems[0].Inspect(ctx, name)
		b, _ := mems[1].Inspect(ctx, name)
		return !a.Held && !b.Held
	}) {
		t.Fatal("the release did not reach nodes 0 and 1")
	}
	if g, err := waiter.Acquire(ctx, req); err != nil || !g.Acquired {
		t.Fatalf("the waiter's attempt after the release on a majority: %+v, %v; want granted", g, err)
	}
	close(lateRelease)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	// Well before the entry's 30s heartbeat deadline: it left node 2's
	// queue.
	if !eventually(10*time.Second, func() bool {
		info, err := mems[2].Inspect(ctx, name)
		return err == nil && info.Waiters == 0
	}) {
		info, _ := mems[2].Inspect(ctx, name)
		t.Fatalf("node 2 keeps the granted waiter's entry: %d waiters", info.Waiters)
	}
}

// threeMems returns three embedded engines, closed when the test ends.
func threeMems(t *testing.T) []*memory.Engine {
	mems := []*memory.Engine{memory.New(), memory.New(), memory.New()}
	for _, m := range mems {
		t.Cleanup(func() { _ = m.Close() })
	}
	return mems
}

// memQuorumOf is a quorum on the embedded engines mems (left open when
// it closes).
func memQuorumOf(t *testing.T, mems []*memory.Engine) *quorum.Engine {
	t.Helper()
	engines := make([]engine.Engine, len(mems))
	for i, m := range mems {
		engines[i] = &gatedNode{Engine: m}
	}
	q, err := quorum.New(engines, quorum.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}
