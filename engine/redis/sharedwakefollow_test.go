package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestSharedWakeChannelFollowsWaiter is TestWakeChannelFollowsWaiter for a
// shared lock's waiter (a semaphore's, an RW lock's writer): its wake-ups
// go to the engine its latest attempt came through, the one that listens
// for it now, not to the engine it entered the queue through, and a
// heartbeat through another engine, or an attempt refused as bad input
// (the other kind), does not move them. Both engines subscribe the
// waiter; the release's one wake-up must reach the engine of the waiter's
// latest attempt, and the woken waiter is granted through it.
func TestSharedWakeChannelFollowsWaiter(t *testing.T) {
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

	for _, k := range []struct {
		name string
		kind sharedWaiter
	}{
		{"semaphore", sharedWaiter{kind: engine.Semaphore, limit: 1, weight: 1}},
		{"rwlock writer", sharedWaiter{kind: engine.RWLock, limit: engine.RWPermits, weight: engine.RWPermits}},
	} {
		sw := k.kind
		for i, c := range []struct {
			name string
			// moves sends requests of waiter w (queued through first) and
			// returns the engine its wake-ups must reach.
			moves func(t *testing.T, name, w string) string
		}{
			{"an attempt through the second engine", func(t *testing.T, name, w string) string {
				sw.queueThrough(t, second, name, w)
				return "second"
			}},
			{"a heartbeat through the second engine", func(t *testing.T, name, w string) string {
				sw.heartbeatThrough(t, second, name, w)
				return "first"
			}},
			{"back through the first engine after the second", func(t *testing.T, name, w string) string {
				sw.queueThrough(t, second, name, w)
				sw.queueThrough(t, first, name, w)
				sw.heartbeatThrough(t, second, name, w)
				return "first"
			}},
			{"an attempt through the second engine, then a heartbeat through the first", func(t *testing.T, name, w string) string {
				sw.queueThrough(t, second, name, w)
				sw.heartbeatThrough(t, first, name, w)
				return "second"
			}},
			{"a refused attempt of the other kind through the second engine", func(t *testing.T, name, w string) string {
				other := sharedWaiter{kind: engine.Semaphore, limit: 1, weight: 1}
				if sw.kind == engine.Semaphore {
					other = sharedWaiter{kind: engine.RWLock, limit: engine.RWPermits, weight: engine.RWPermits}
				}
				g, err := second.Acquire(ctx, other.request(name, w, w, true))
				if ae := (*engine.ArgumentError)(nil); !errors.As(err, &ae) {
					t.Fatalf("%s's attempt as a %s: %+v, %v; want an *engine.ArgumentError", w, other.kind, g, err)
				}
				return "first"
			}},
		} {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				name := fmt.Sprintf("shared-follow-%s-%d", k.kind.kind, i)
				if g, err := first.Acquire(ctx, sw.request(name, "holder", "holder", false)); err != nil || !g.Acquired {
					t.Fatalf("holder: %+v, %v", g, err)
				}
				sw.queueThrough(t, first, name, "w1")
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
				if r, err := first.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder", Kind: sw.kind}); err != nil || r.Status != engine.Released {
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
				g, err := engines[want].Acquire(ctx, sw.request(name, "w1", "w1-grant", true))
				if err != nil || !g.Acquired {
					t.Fatalf("the woken head through the %s engine: %+v, %v; want granted", want, g, err)
				}
				if r, err := engines[want].Release(ctx, engine.ReleaseRequest{Name: name, Owner: "w1", Kind: sw.kind}); err != nil || r.Status != engine.Released {
					t.Fatalf("the head's release: %+v, %v", r, err)
				}
			})
		}
	}
}

// sharedWaiter is the kind, limit and weight of a shared lock's requests.
type sharedWaiter struct {
	kind          engine.Kind
	limit, weight int
}

// request is an acquire of owner w of name, attempt id attempt; waiting
// makes it an attempt of the waiter w.
func (s sharedWaiter) request(name, w, attempt string, waiting bool) engine.AcquireRequest {
	r := engine.AcquireRequest{Name: name, Owner: w, Attempt: attempt, TTL: 30 * time.Second,
		Kind: s.kind, Limit: s.limit, Weight: s.weight}
	if waiting {
		r.Waiting, r.Waiter, r.WaiterTTL = true, w, 30*time.Second
	}
	return r
}

// queueThrough makes one waiting attempt of waiter w through e, refused: w
// is queued.
func (s sharedWaiter) queueThrough(t *testing.T, e *redisengine.Engine, name, w string) {
	t.Helper()
	g, err := e.Acquire(context.Background(), s.request(name, w, w, true))
	if err != nil || g.Acquired || !g.Queued {
		t.Fatalf("%s's attempt: %+v, %v; want queued", w, g, err)
	}
}

// heartbeatThrough renews queued waiter w's entry through e.
func (s sharedWaiter) heartbeatThrough(t *testing.T, e *redisengine.Engine, name, w string) {
	t.Helper()
	res, err := e.Extend(context.Background(), []engine.ExtendRequest{{Name: name, Owner: w, TTL: 30 * time.Second, Waiter: true, Kind: s.kind}})
	if err != nil || len(res) != 1 || res[0].Err != nil || res[0].Status != engine.Extended {
		t.Fatalf("%s's heartbeat: %+v, %v; want extended", w, res, err)
	}
}
