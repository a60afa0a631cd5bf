package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestShared checks what the conformance suite does not: the kinds of one
// name exclude each other both ways, tokens are revisions in grant order
// across readers and writers, every key of a shared lock is on a lease,
// and the watchdog's Extend renews a holder, moves it to a new ttl with its
// token, and reports it Missing once released.
func TestShared(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("KindsExclude", func(t *testing.T) {
		c := newClient(t, cl)
		r, err := c.RWMutex("kinds").RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newClient(t, cl).TryAcquire(ctx, "kinds"); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("a mutex on a name held as an RW lock: %v, want ErrInvalidArgument", err)
		}
		if _, err := newClient(t, cl).Semaphore("kinds", 2).TryAcquire(ctx); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("a semaphore on a name held as an RW lock: %v, want ErrInvalidArgument", err)
		}
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
		m, err := newClient(t, cl).TryAcquire(ctx, "kinds")
		if err != nil {
			t.Fatalf("a mutex once the readers left: %v", err)
		}
		_ = m.Release(ctx)
	})

	t.Run("Tokens", func(t *testing.T) {
		rw := newClient(t, cl).RWMutex("tokens")
		r1, err := rw.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := newClient(t, cl).RWMutex("tokens").RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = r1.Release(ctx)
		_ = r2.Release(ctx)
		w, err := rw.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Release(ctx)
		r3, err := rw.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = r3.Release(ctx)
		if !(r1.Token() < r2.Token() && r2.Token() < w.Token() && w.Token() < r3.Token()) {
			t.Fatalf("tokens %d %d, writer %d, then %d: want increasing", r1.Token(), r2.Token(), w.Token(), r3.Token())
		}
	})

	t.Run("KeysOnLeases", func(t *testing.T) {
		c := newClient(t, cl)
		sem := c.Semaphore("leased", 3)
		if err := sem.SetLimit(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Semaphore("leased", 3).TryAcquire(ctx, distlock.WithWeight(3)); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("weight 3 after SetLimit 2 on a new semaphore (the stored limit governs): %v", err)
		}
		l, err := c.Semaphore("leased", 2).Acquire(ctx, distlock.WithWeight(2))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		cli := cl.Client(t)
		resp, err := cli.Get(ctx, etcdengine.DefaultPrefix+"leased/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 2 { // the kind and limit, the holder
			t.Fatalf("%d keys, want 2", len(resp.Kvs))
		}
		for _, kv := range resp.Kvs {
			if kv.Lease == 0 {
				t.Errorf("key %s has no lease", kv.Key)
			}
		}
		leaks, _, err := etcdengine.New(cli).Leaks(ctx, "leased", time.Hour, "", 100)
		if err != nil || len(leaks) != 0 {
			t.Fatalf("Leaks: %v, %v", leaks, err)
		}
	})

	t.Run("Extend", func(t *testing.T) {
		e := etcdengine.New(cl.Client(t))
		defer e.Close()
		req := engine.AcquireRequest{Name: "extend", Owner: "o", TTL: 2 * time.Second, Attempt: "o", OneOff: true, Kind: engine.Semaphore, Limit: 2, Weight: 1}
		g, err := e.Acquire(ctx, req)
		if err != nil || !g.Acquired {
			t.Fatalf("Acquire (shared): %+v, %v", g, err)
		}
		for _, ttl := range []time.Duration{2 * time.Second, 5 * time.Second} {
			res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "extend", Owner: "o", TTL: ttl, Kind: engine.Semaphore}})
			if err != nil || res[0].Status != engine.Extended || res[0].Token != g.Token {
				t.Fatalf("Extend to %v: %+v, %v; want Extended with token %d", ttl, res, err, g.Token)
			}
		}
		info, err := e.Inspect(ctx, "extend")
		if err != nil || len(info.Holders) != 1 || info.Holders[0].TTL <= 2*time.Second {
			t.Fatalf("after the move to 5s: %+v, %v", info, err)
		}
		if res, err := e.Release(ctx, engine.ReleaseRequest{Name: "extend", Owner: "o", Kind: engine.Semaphore}); err != nil || res.Status != engine.Released {
			t.Fatalf("ReleaseShared: %+v, %v", res, err)
		}
		res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "extend", Owner: "o", TTL: 2 * time.Second, Kind: engine.Semaphore}})
		if err != nil || res[0].Status != engine.Missing {
			t.Fatalf("Extend after the release: %+v, %v; want Missing", res, err)
		}
	})

	t.Run("HeartbeatWakesHead", func(t *testing.T) {
		e := etcdengine.New(cl.Client(t))
		defer e.Close()
		req := func(owner, waiter string, weight int) engine.AcquireRequest {
			return engine.AcquireRequest{Name: "beat", Owner: owner, TTL: 2 * time.Second,
				Attempt: owner, OneOff: true, Waiter: waiter, WaiterTTL: 3 * time.Second, Kind: engine.Semaphore, Limit: 2, Weight: weight}
		}
		if g, err := e.Acquire(ctx, req("a", "", 2)); err != nil || !g.Acquired {
			t.Fatalf("first holder: %+v, %v", g, err)
		}
		g, err := e.Acquire(ctx, req("b", "wb", 1))
		if err != nil || g.Acquired || !g.Queued || !g.Head || g.Holder != "a" {
			t.Fatalf("a waiter behind a full semaphore: %+v, %v", g, err)
		}
		beat := []engine.ExtendRequest{{Name: "beat", Owner: "wb", TTL: 3 * time.Second, Waiter: true, Kind: engine.Semaphore}}
		if res, err := e.Extend(ctx, beat); err != nil || res[0].Status != engine.Extended || res[0].Wake {
			t.Fatalf("heartbeat while full: %+v, %v", res, err)
		}
		if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "beat", Owner: "a", Kind: engine.Semaphore}); err != nil {
			t.Fatal(err)
		}
		if res, err := e.Extend(ctx, beat); err != nil || res[0].Status != engine.Extended || !res[0].Wake {
			t.Fatalf("heartbeat of the head once it fits: %+v, %v", res, err)
		}
		if g, err := e.Acquire(ctx, req("b", "wb", 1)); err != nil || !g.Acquired {
			t.Fatalf("the head: %+v, %v", g, err)
		}
		if res, err := e.Extend(ctx, beat); err != nil || res[0].Status != engine.Missing {
			t.Fatalf("heartbeat after the grant: %+v, %v", res, err)
		}
	})
}
