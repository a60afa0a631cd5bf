package redis_test

import (
	"context"
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
		if r, err := eng.Release(ctx, "job", owner); err != nil || r.Status != engine.Released {
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
