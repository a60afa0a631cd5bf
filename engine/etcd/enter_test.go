package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestMaybeHeadNotGrantedAheadOfHead: a waiter whose engine believes it
// may head the queue (the entry before it went) tries the one-transaction
// grant, which compares that no entry is older than its own: behind a
// live head of a free lock it is refused (and stays queued), and the head
// is granted. Seen failing with that comparison removed from fastGrantTxn
// (the waiter behind took the lock ahead of the head).
func TestMaybeHeadNotGrantedAheadOfHead(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	e1, e2 := New(cl.Client(t)), New(cl.Client(t))
	t.Cleanup(func() { _ = e1.Close(); _ = e2.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "maybe-head"
	req := func(owner, waiter string) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: 10 * time.Second,
			Waiter: waiter, WaiterTTL: time.Minute, Waiting: waiter != "", Aged: true}
	}
	if g, err := e1.Acquire(ctx, req("holder", "")); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	if g, err := e1.Acquire(ctx, req("a", "wa")); err != nil || g.Acquired || !g.Queued || !g.Head {
		t.Fatalf("head: %+v, %v; want queued at the head", g, err)
	}
	if g, err := e2.Acquire(ctx, req("b", "wb")); err != nil || g.Acquired || !g.Queued || g.Head {
		t.Fatalf("second waiter: %+v, %v; want queued behind the head", g, err)
	}
	// e2 takes its waiter for a possible head (as when the entry before
	// it is deleted), and the lock is freed.
	e2.heads.set(name, "wb", maybeHead, 0)
	if e2.heads.candidate(name, "wb") == 0 {
		t.Fatal("the second waiter is not a candidate for the one-transaction grant")
	}
	if r, err := e1.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released {
		t.Fatalf("release: %+v, %v", r, err)
	}
	if g, err := e2.Acquire(ctx, req("b", "wb")); err != nil || g.Acquired || !g.Queued {
		t.Fatalf("the waiter behind the head of a free lock: %+v, %v; want refused, queued", g, err)
	}
	if g, err := e1.Acquire(ctx, req("a", "wa")); err != nil || !g.Acquired {
		t.Fatalf("the head: %+v, %v; want granted", g, err)
	}
}

// TestEnteringWaiterReservesForDeadHead: a waiting Acquire that enters the
// queue behind the head of a free lock writes no reservation for it (the
// release woke the head); when the head does not come (here a waiter that
// never renews its entry, on a lease of a minute), the waiter right behind
// it reserves at its heartbeat, the reservation lapses, the dead head is
// dropped and the live waiter granted, long before the dead head's lease
// would end. Seen failing with reserves always false (the live waiter
// waited for the dead head's lease).
func TestEnteringWaiterReservesForDeadHead(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	e1 := New(cl.Client(t))
	t.Cleanup(func() { _ = e1.Close() })
	c := distlock.New(New(cl.Client(t)))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "dead-head"
	if g, err := e1.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "holder", TTL: 10 * time.Second}); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	ghost := engine.AcquireRequest{Name: name, Owner: "ghost", TTL: 10 * time.Second, Waiter: "ghost", WaiterTTL: time.Minute, Waiting: true}
	if g, err := e1.Acquire(ctx, ghost); err != nil || !g.Queued || !g.Head {
		t.Fatalf("the head that will not come: %+v, %v", g, err)
	}
	if r, err := e1.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released {
		t.Fatalf("release: %+v, %v", r, err)
	}
	// Far less than the dead head's minute: a heartbeat, a reservation
	// (at most reserveTTL), a heartbeat, and slack for a loaded machine.
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	l, err := c.Acquire(wctx, name)
	if err != nil {
		t.Fatalf("the live waiter behind a dead head: %v", err)
	}
	_ = l.Release(ctx)
}
