package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestReleasePublishesOnlyForWaiters: a release publishes a wake-up when a
// waiting acquire found the lock held since its grant, and not otherwise
// (an uncontended lock, or one only tried without waiting, costs no
// PUBLISH). A waiter's mark lasts for the grant it marked only.
func TestReleasePublishesOnlyForWaiters(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	channel := redisengine.DefaultPrefix + "{job}"
	ps := srv.Client().Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription is in place
		t.Fatal(err)
	}
	// published reports whether the release before it published: a
	// marker published after the release arrives after that release's
	// message (one connection delivers in order), so the first message
	// that is not the marker is the release's.
	const marker = "test-marker"
	published := func() bool {
		t.Helper()
		if err := srv.Client().Publish(ctx, channel, marker).Err(); err != nil {
			t.Fatal(err)
		}
		got := false
		for {
			select {
			case m := <-ps.Channel():
				if m.Payload == marker {
					return got
				}
				got = true
			case <-time.After(10 * time.Second):
				t.Fatal("the marker never arrived")
			}
		}
	}
	acquire := func(owner string, waiting bool) bool {
		t.Helper()
		g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "job", Owner: owner, Attempt: owner, TTL: 10 * time.Second, Waiting: waiting})
		if err != nil {
			t.Fatal(err)
		}
		return g.Acquired
	}
	release := func(owner string) {
		t.Helper()
		if r, err := eng.Release(ctx, engine.ReleaseRequest{Name: "job", Owner: owner}); err != nil || r.Status != engine.Released {
			t.Fatalf("release %s: %+v, %v", owner, r, err)
		}
	}

	for _, c := range []struct {
		name    string
		refused func() // attempts by others while "a" holds
		want    bool
	}{
		{"uncontended", func() {}, false},
		{"tried without waiting", func() { acquire("b", false) }, false},
		{"a waiter was refused", func() { acquire("b", true) }, true},
		{"the waiter was refused by the previous grant only", func() {}, false},
	} {
		if !acquire("a", false) {
			t.Fatalf("%s: not granted", c.name)
		}
		c.refused()
		release("a")
		if got := published(); got != c.want {
			t.Fatalf("%s: published %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReleaseWithQueueTellsObservers: a release that hands the lock to the
// head of its queue wakes the head on its engine's own channel, and tells
// the lock's channel too, where an election's observers (and waiters
// outside a queue) listen: they read the lock again at once, rather than
// at the old holder's expiry. The head's own wake-up never goes on the
// lock's channel (one message reaches one engine, not every one that
// waits or observes).
func TestReleaseWithQueueTellsObservers(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	observer, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	obs, err := observer.Subscribe(ctx, "elected")
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	head, err := waiter.SubscribeWaiter(ctx, "elected", "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	if g, err := holder.Acquire(ctx, engine.AcquireRequest{Name: "elected", Owner: "a", Attempt: "a", TTL: 30 * time.Second}); err != nil || !g.Acquired {
		t.Fatalf("holder: %+v, %v", g, err)
	}
	if g, err := waiter.Acquire(ctx, engine.AcquireRequest{Name: "elected", Owner: "b", Attempt: "b", TTL: 30 * time.Second,
		Waiting: true, Waiter: "w1", WaiterTTL: 30 * time.Second}); err != nil || g.Acquired || !g.Queued {
		t.Fatalf("waiter: %+v, %v; want queued", g, err)
	}
	for _, s := range []engine.Subscription{obs, head} {
		for len(s.C()) > 0 {
			<-s.C()
		}
	}
	if r, err := holder.Release(ctx, engine.ReleaseRequest{Name: "elected", Owner: "a"}); err != nil || r.Status != engine.Released {
		t.Fatalf("release: %+v, %v", r, err)
	}
	for what, s := range map[string]engine.Subscription{"the head": head, "the observer": obs} {
		select {
		case <-s.C():
		case <-ctx.Done():
			t.Fatalf("the release did not wake %s", what)
		}
	}
	// The head's wake-up never went on the lock's channel, which every
	// observing or waiting engine listens on: a marker published after the
	// release arrives after every message the release sent there.
	channel := redisengine.DefaultPrefix + "{elected}"
	ps := srv.Client().Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if g, err := waiter.Acquire(ctx, engine.AcquireRequest{Name: "elected", Owner: "b", Attempt: "b2", TTL: 30 * time.Second,
		Waiting: true, Waiter: "w1", WaiterTTL: 30 * time.Second}); err != nil || !g.Acquired {
		t.Fatalf("the woken head: %+v, %v; want granted", g, err)
	}
	if g, err := holder.Acquire(ctx, engine.AcquireRequest{Name: "elected", Owner: "c", Attempt: "c2", TTL: 30 * time.Second,
		Waiting: true, Waiter: "w2", WaiterTTL: 30 * time.Second}); err != nil || g.Acquired || !g.Queued {
		t.Fatalf("second waiter: %+v, %v; want queued", g, err)
	}
	if r, err := waiter.Release(ctx, engine.ReleaseRequest{Name: "elected", Owner: "b"}); err != nil || r.Status != engine.Released {
		t.Fatalf("b's release: %+v, %v", r, err)
	}
	const marker = "test-marker"
	if err := srv.Client().Publish(ctx, channel, marker).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case m := <-ps.Channel():
			if m.Payload == marker {
				return
			}
			if strings.HasPrefix(m.Payload, "w:") {
				t.Fatalf("a waiter's wake-up %q on the lock's channel, which every engine listens on", m.Payload)
			}
		case <-ctx.Done():
			t.Fatal("the marker never arrived")
		}
	}
}
