package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestHandOffChecked: the head of the line is granted without reading the
// line when its watch saw a release, so the grant's transaction must
// still be checked against the name's version: a newcomer that took the
// lock between the release and the head's attempt (the head asked for no
// reservation, so barging is allowed) makes the head's hand-off fail and
// its attempt refused, never a second holder.
func TestHandOffChecked(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder, head, newcomer := dial(t, ens.Servers()), dial(t, ens.Servers()), dial(t, ens.Servers())
	const name = "handoff-checked"
	req := func(owner string) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, OneOff: true, TTL: 30 * time.Second}
	}
	if g, err := holder.Acquire(ctx, req("holder")); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	w := req("head")
	w.Waiting, w.Waiter, w.WaiterTTL, w.Order = true, "head-waiter", time.Minute, engine.OrderNoReserve
	if g, err := head.Acquire(ctx, w); err != nil || !g.Queued || !g.Head {
		t.Fatalf("head's first attempt: %+v, %v, want queued at the head", g, err)
	}
	sub, err := head.SubscribeWaiter(ctx, name, w.Waiter)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	drain(sub.C())
	if _, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil {
		t.Fatal(err)
	}
	select { // the head's watch saw the release
	case <-sub.C():
	case <-ctx.Done():
		t.Fatal("the head was not woken by the release")
	}
	if g, err := newcomer.Acquire(ctx, req("newcomer")); err != nil || !g.Acquired {
		t.Fatalf("newcomer (the head asked for no reservation): %+v, %v", g, err)
	}
	g, err := head.Acquire(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if g.Acquired {
		t.Fatalf("the head was granted %+v while the newcomer holds the lock", g)
	}
	if !g.Queued {
		t.Fatalf("the head's attempt: %+v, want still queued", g)
	}
}

// drain empties a wake-up channel.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
