package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestPlacelessWaiterWokenByReleaseOnly: a waiter that subscribed before
// its first attempt made its place in line watches the name node, which
// every grant and release writes. A grant leaves it nothing to try (its
// attempt, on its way, takes the place), so only a change that may have
// freed the lock wakes it: among 16 clients each grant used to cost one
// wasted attempt per such waiter. The grant's firing is taken as handled
// once the subscription sends its watch again (one more read by the
// waiter's engine): a wake-up may still follow that read's answer, so a
// wrong wake-up is caught in most rounds, not all (10 rounds). A release
// then wakes it.
func TestPlacelessWaiterWokenByReleaseOnly(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder, waiter := dial(t, ens.Servers()), dial(t, ens.Servers())
	const name = "placeless-waiter"
	req := engine.AcquireRequest{Name: name, Owner: "holder", Attempt: "holder", OneOff: true, TTL: 30 * time.Second}
	// The name's node exists before the subscription (a free lock).
	if g, err := holder.Acquire(ctx, req); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	if _, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil {
		t.Fatal(err)
	}
	sub, err := waiter.SubscribeWaiter(ctx, name, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	rearmed := func(before int64) func() bool {
		return func() bool { return waiter.Requests().Reads > before }
	}
	for round := range 10 {
		reads := waiter.Requests().Reads
		req.Attempt = req.Owner + string(rune('a'+round))
		if g, err := holder.Acquire(ctx, req); err != nil || !g.Acquired {
			t.Fatalf("round %d: grant: %+v, %v", round, g, err)
		}
		waitUntil(t, 20*time.Second, "the watch set again after the grant", rearmed(reads))
		select {
		case <-sub.C():
			t.Fatalf("round %d: a grant woke a waiter with no place in line", round)
		default:
		}
		if _, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sub.C():
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the release did not wake the waiter", round)
		}
	}
}
