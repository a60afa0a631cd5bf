package redis_test

// The acquire and release scripts sent without the queue's keys: a request
// outside the queue sends the lock, the queue, the shared lock's hash and
// holders (refused while it has live holders) and the high-water, a
// release the lock alone; where a script needs more keys it changes
// nothing and says so, and the engine sends it again with every key. A
// name whose last grant was marked (waiters queued) sends every key at
// once.

import (
	"context"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// keysHook records the number of keys of every script command.
type keysHook struct {
	mu   sync.Mutex
	keys []int64
}

func (h *keysHook) record(cmd goredis.Cmder) {
	if !isScriptCmd(cmd) {
		return
	}
	n, _ := cmd.Args()[2].(int)
	h.mu.Lock()
	h.keys = append(h.keys, int64(n))
	h.mu.Unlock()
}

// take returns the key counts recorded since the last call.
func (h *keysHook) take() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.keys
	h.keys = nil
	return k
}

func (h *keysHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *keysHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

func (h *keysHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			h.record(c)
		}
		return next(ctx, cmds)
	}
}

func sameKeys(got []int64, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestScriptsWithoutQueueKeys(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	newEngine := func() (*redisengine.Engine, *keysHook) {
		t.Helper()
		c := srv.Client()
		h := &keysHook{}
		c.AddHook(h)
		e, err := redisengine.New(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e, h
	}
	holder, hh := newEngine()
	waiters, wh := newEngine()
	const name = "fast"
	acquire := func(e *redisengine.Engine, r engine.AcquireRequest) engine.Grant {
		t.Helper()
		r.Name, r.TTL = name, 10*time.Second
		if r.Attempt == "" {
			r.Attempt, r.OneOff = r.Owner, true
		}
		if r.Waiter != "" {
			r.Waiting, r.WaiterTTL = true, 3*time.Second
		}
		g, err := e.Acquire(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	release := func(e *redisengine.Engine, owner string) {
		t.Helper()
		if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err != nil || r.Status != engine.Released {
			t.Fatalf("release %s: %+v, %v", owner, r, err)
		}
	}

	// Uncontended: six keys to acquire (the lock, the queue, the shared
	// lock's three, the high-water), one to release (once the
	// server has the scripts: a first EVALSHA is sent again with EVAL).
	if g := acquire(holder, engine.AcquireRequest{Owner: "a"}); !g.Acquired {
		t.Fatalf("uncontended: %+v", g)
	}
	release(holder, "a")
	hh.take()
	if g := acquire(holder, engine.AcquireRequest{Owner: "a"}); !g.Acquired {
		t.Fatalf("uncontended: %+v", g)
	}
	release(holder, "a")
	if k := hh.take(); !sameKeys(k, 6, 1) {
		t.Fatalf("uncontended: scripts sent with %v keys, want [6 1]", k)
	}

	// A waiter queues (a fair one, so that the lock waits for it) while
	// "a" holds: the release, sent with the lock alone, is sent again with
	// the queue's keys, and wakes the head.
	if g := acquire(holder, engine.AcquireRequest{Owner: "a"}); !g.Acquired {
		t.Fatalf("grant: %+v", g)
	}
	sub, err := waiters.SubscribeWaiter(ctx, name, "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if g := acquire(waiters, engine.AcquireRequest{Owner: "w1", Waiter: "w1", Order: engine.OrderFair}); g.Acquired || !g.Queued || !g.Head {
		t.Fatalf("w1: %+v, want queued at the head", g)
	}
	hh.take()
	release(holder, "a")
	if k := hh.take(); !sameKeys(k, 1, 4) {
		t.Fatalf("marked release: scripts sent with %v keys, want [1 4]", k)
	}
	select {
	case <-sub.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the head was not woken")
	}

	// A request outside the queue, from an engine that saw no contention,
	// finds the lock kept for the fair head: sent again with every key, it
	// is refused.
	other, oh := newEngine()
	if g := acquire(other, engine.AcquireRequest{Owner: "b"}); g.Acquired || !g.Reserved {
		t.Fatalf("newcomer: %+v, want refused, the lock reserved", g)
	}
	if k := oh.take(); !sameKeys(k, 6, 8) {
		t.Fatalf("newcomer: scripts sent with %v keys, want [6 8]", k)
	}
	// And so does its next request, at once.
	if g := acquire(other, engine.AcquireRequest{Owner: "b"}); g.Acquired {
		t.Fatalf("newcomer again: %+v", g)
	}
	if k := oh.take(); !sameKeys(k, 8) {
		t.Fatalf("newcomer again: scripts sent with %v keys, want [8]", k)
	}

	// A second waiter queues; the head takes the lock: a marked grant, so
	// the holder's release sends every key at once.
	if g := acquire(waiters, engine.AcquireRequest{Owner: "w2", Waiter: "w2"}); g.Acquired || !g.Queued {
		t.Fatalf("w2: %+v", g)
	}
	if g := acquire(waiters, engine.AcquireRequest{Owner: "w1", Waiter: "w1", Order: engine.OrderFair}); !g.Acquired {
		t.Fatalf("w1 confirms: %+v", g)
	}
	sub2, err := waiters.SubscribeWaiter(ctx, name, "w2")
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	wh.take()
	release(waiters, "w1")
	if k := wh.take(); !sameKeys(k, 4) {
		t.Fatalf("release of a marked grant: scripts sent with %v keys, want [4]", k)
	}
	select {
	case <-sub2.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the next head was not woken")
	}
	// w2 takes it (nobody queues behind it: an unmarked grant), and then
	// the engine sends the lock alone again.
	if g := acquire(waiters, engine.AcquireRequest{Owner: "w2", Waiter: "w2"}); !g.Acquired {
		t.Fatalf("w2 takes it: %+v", g)
	}
	release(waiters, "w2")
	wh.take()
	if g := acquire(waiters, engine.AcquireRequest{Owner: "c"}); !g.Acquired {
		t.Fatalf("after the queue: %+v", g)
	}
	release(waiters, "c")
	if k := wh.take(); !sameKeys(k, 6, 1) {
		t.Fatalf("after the queue: scripts sent with %v keys, want [6 1]", k)
	}
	n, err := srv.Client().Exists(ctx, redisengine.DefaultPrefix+"{"+name+"}:q").Result()
	if err != nil || n != 0 {
		t.Fatalf("queue left: %d, %v", n, err)
	}
}
