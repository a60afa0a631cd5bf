//go:build unix

package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

// TestWaitForSharedKindsOnRedis: a deadlock across a reader-writer lock and
// a semaphore on Redis, between two Clients with engines of their own (two
// processes): owner-a holds mix/x for writing and waits for a permit of
// mix/y, which owner-b holds while it waits to read mix/x. A server on the
// same Redis draws both edges from the shared locks' own queues and
// reports the cycle.
func TestWaitForSharedKindsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	engine := func() *redisengine.Engine {
		e, err := redisengine.New(srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	s := start(t, engine())
	ca, cb := distlock.New(engine()), distlock.New(engine())
	t.Cleanup(func() { ca.Close(); cb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := distlock.WithOwner("owner-a"), distlock.WithOwner("owner-b")
	if _, err := ca.RWMutex("mix/x").Lock(ctx, a, distlock.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Semaphore("mix/y", 1).Acquire(ctx, b, distlock.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	defer func() {
		stop()
		for range 2 {
			<-done
		}
	}()
	wait := func(take func(context.Context) (*distlock.Lease, error)) {
		go func() {
			defer func() { done <- struct{}{} }()
			if l, err := take(wctx); err == nil {
				_ = l.Release(context.Background())
			}
		}()
	}
	wait(func(ctx context.Context) (*distlock.Lease, error) { return ca.Semaphore("mix/y", 1).Acquire(ctx, a) })
	wait(func(ctx context.Context) (*distlock.Lease, error) { return cb.RWMutex("mix/x").RLock(ctx, b) })

	var g api.WaitFor
	waitFor(t, time.Minute, "the cycle across mix/x and mix/y in GET /v1/waitfor", func() bool {
		g = getWaitFor(t, s.url)
		return len(g.Cycles) > 0
	})
	if g.QueueUnknown || len(g.Cycles) != 1 || len(g.Cycles[0].Edges) != 2 {
		t.Fatalf("graph %+v, want one cycle of two edges, every queue known", g)
	}
	got := map[string]string{}
	for _, e := range g.Cycles[0].Edges {
		got[e.From.Owner] = e.Lock + " held by " + e.To.Owner
	}
	if got["owner-a"] != "mix/y held by owner-b" || got["owner-b"] != "mix/x held by owner-a" {
		t.Fatalf("cycle %v", got)
	}
	for _, e := range g.Edges {
		if e.WaitedMs < 0 {
			t.Errorf("edge %+v: waited %d ms, want the time in the queue", e, e.WaitedMs)
		}
	}
}
