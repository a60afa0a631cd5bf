package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestWakeChannelFollowsWaiter: a queued waiter's wake-ups go to the engine
// its latest attempt came through, the one that listens for it now (a
// remote waiter whose server restarted or died comes back through another
// server's engine, and attempts there once its event stream is open
// again), not to the engine it entered the queue through; a heartbeat
// through another engine does not move them (a remote waiter's heartbeats
// go through whichever server answers, while its event stream may stay
// where it is). Both engines subscribe the waiter; the release's one
// wake-up reaches one of them, and must reach the engine of the waiter's
// latest attempt. It reached the first engine, where nobody listens once
// its server is gone: the reservation lapsed and the head lost its turn.
func TestWakeChannelFollowsWaiter(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newEngine := func() *redisengine.Engine {
		e, err := redisengine.New(srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	first, second := newEngine(), newEngine()
	engines := map[string]*redisengine.Engine{"first": first, "second": second}

	for i, c := range []struct {
		name string
		// moves sends requests of waiter w (queued through first) and
		// returns the engine its wake-ups must reach.
		moves func(t *testing.T, name, w string) string
	}{
		{"an attempt through the second engine", func(t *testing.T, name, w string) string {
			queueThrough(t, second, name, w)
			return "second"
		}},
		{"a heartbeat through the second engine", func(t *testing.T, name, w string) string {
			heartbeatThrough(t, second, name, w)
			return "first"
		}},
		{"back through the first engine after the second", func(t *testing.T, name, w string) string {
			queueThrough(t, second, name, w)
			queueThrough(t, first, name, w)
			heartbeatThrough(t, second, name, w)
			return "first"
		}},
		{"an attempt through the second engine, then a heartbeat through the first", func(t *testing.T, name, w string) string {
			queueThrough(t, second, name, w)
			heartbeatThrough(t, first, name, w)
			return "second"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("follow-%d", i)
			if g, err := first.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "holder", Attempt: "holder", TTL: 30 * time.Second}); err != nil || !g.Acquired {
				t.Fatalf("holder: %+v, %v", g, err)
			}
			queueThrough(t, first, name, "w1")
			subs := map[string]engine.Subscription{}
			for what, e := range engines {
				s, err := e.SubscribeWaiter(ctx, name, "w1")
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				subs[what] = s
			}
			want := c.moves(t, name, "w1")
			for _, s := range subs { // wake-ups of the subscribing, if any
				for len(s.C()) > 0 {
					<-s.C()
				}
			}
			if r, err := first.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released {
				t.Fatalf("release: %+v, %v", r, err)
			}
			select {
			case <-subs["first"].C():
				if want != "first" {
					t.Fatalf("the head's wake-up went to the first engine; its latest attempt came through the %s", want)
				}
			case <-subs["second"].C():
				if want != "second" {
					t.Fatalf("the head's wake-up went to the second engine; its latest attempt came through the %s", want)
				}
			case <-ctx.Done():
				t.Fatal("the release woke neither engine's subscription of the head")
			}
			// The head, woken, is granted through the engine it came
			// through last (the lock is reserved for it).
			g, err := engines[want].Acquire(ctx, fairWaiting(name, "w1", "w1-grant"))
			if err != nil || !g.Acquired {
				t.Fatalf("the woken head through the %s engine: %+v, %v; want granted", want, g, err)
			}
			if r, err := engines[want].Release(ctx, engine.ReleaseRequest{Name: name, Owner: "w1"}); err != nil || r.Status != engine.Released {
				t.Fatalf("the head's release: %+v, %v", r, err)
			}
		})
	}
}

// fairWaiting is a fair waiting acquire of waiter w of name, attempt id attempt.
func fairWaiting(name, w, attempt string) engine.AcquireRequest {
	return engine.AcquireRequest{Name: name, Owner: w, Attempt: attempt, TTL: 30 * time.Second,
		Waiting: true, Waiter: w, WaiterTTL: 30 * time.Second, Order: engine.OrderFair}
}

// queueThrough makes one waiting attempt of waiter w through e, refused: w is
// queued.
func queueThrough(t *testing.T, e *redisengine.Engine, name, w string) {
	t.Helper()
	g, err := e.Acquire(context.Background(), fairWaiting(name, w, w))
	if err != nil || g.Acquired || !g.Queued {
		t.Fatalf("%s's attempt: %+v, %v; want queued", w, g, err)
	}
}

// heartbeatThrough renews queued waiter w's entry through e.
func heartbeatThrough(t *testing.T, e *redisengine.Engine, name, w string) {
	t.Helper()
	res, err := e.Extend(context.Background(), []engine.ExtendRequest{{Name: name, Owner: w, TTL: 30 * time.Second, Waiter: true}})
	if err != nil || len(res) != 1 || res[0].Err != nil || res[0].Status != engine.Extended {
		t.Fatalf("%s's heartbeat: %+v, %v; want extended", w, res, err)
	}
}
