package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server"
)

// TestWaiterWakeUpIsItsOwn: two waiters of one lock queued through one
// engine each wait on a stream of their own; the release wakes the head's
// subscription, and the other waiter's sleeps on.
func TestWaiterWakeUpIsItsOwn(t *testing.T) {
	mem := newMemory(t)
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	e := newRemote(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if g, err := mem.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "h", TTL: time.Minute, Attempt: "h"}); err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	subs := map[string]engine.Subscription{}
	for _, w := range []string{"a", "b"} {
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: w, Attempt: w, TTL: time.Minute,
			Waiting: true, Waiter: w, WaiterTTL: time.Minute})
		if err != nil || g.Acquired || !g.Queued {
			t.Fatalf("waiter %s: %+v, %v", w, g, err)
		}
		sub, err := e.SubscribeWaiter(ctx, "n", w)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs[w] = sub
	}
	if _, err := mem.Release(ctx, engine.ReleaseRequest{Name: "n", Owner: "h"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-subs["a"].C():
	case <-ctx.Done():
		t.Fatal("the head's subscription was not woken")
	}
	// A subscription made now is made after every wake-up the release's
	// event caused through this engine's subscriptions.
	sub, err := e.SubscribeWaiter(ctx, "n", "c")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if len(subs["b"].C()) > 0 {
		t.Fatal("the head's wake-up woke another waiter's subscription")
	}
}
