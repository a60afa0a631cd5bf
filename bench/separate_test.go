package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/bench/peers"
	"github.com/distlock/distlock/internal/redistest"
)

// TestSeparate checks what the per-Client S3 table and S7 rely on: the
// instances peers.Separate builds are distinct, each has its own
// connections, and every one of them counts into the Target's Counter.
func TestSeparate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := redistest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	n, err := newNode(ctx, srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.admin.Close()

	const instances = 3
	for _, v := range []peers.Variant{peers.Distlock(), peers.Redsync(), peers.Rueidislock()} {
		t.Run(v.Name, func(t *testing.T) {
			clients0 := stableClients(ctx, t, n) // the previous rows' connections closed
			c := &peers.Counter{}
			lk, err := peers.Separate(v, peers.Target{Addrs: []string{srv.Addr()}, Counter: c, Workers: instances}, instances)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := lk.Close(); err != nil {
					t.Error(err)
				}
			}()
			seen := map[peers.Locker]bool{}
			for i := range instances {
				w := worker(lk, i)
				if seen[w] {
					t.Fatalf("worker %d shares an instance", i)
				}
				seen[w] = true
				before := c.Requests()
				h, err := w.Acquire(ctx, fmt.Sprintf("sep-%d", i))
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if c.Requests() <= before {
					t.Errorf("instance %d: its requests were not counted", i)
				}
			}
			if worker(lk, instances) != worker(lk, 0) {
				t.Error("worker i must use instance i mod n")
			}
			_, clients1, err := n.memory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if clients1-clients0 < instances {
				t.Errorf("%d instances opened %d connections, want one each at least", instances, clients1-clients0)
			}
		})
	}
}

// stableClients returns the server's connected_clients once two readings
// 50 ms apart agree (at most 2 s).
func stableClients(ctx context.Context, t *testing.T, n *node) int64 {
	t.Helper()
	prev := int64(-1)
	for range 40 {
		_, c, err := n.memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c == prev {
			return c
		}
		prev = c
		time.Sleep(50 * time.Millisecond)
	}
	return prev
}
