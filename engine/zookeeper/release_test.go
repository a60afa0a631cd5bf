package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestPartialReleaseKeepsExpiry: a release that drops one of two holds
// rewrites the holder's node (its count), which moves the node's mtime;
// the lease must still end when it did. Before, a hold written with its
// ttl from the node's mtime was extended by the release to a whole ttl
// from then (the checker once saw the holder live past its deadline).
func TestPartialReleaseKeepsExpiry(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := dial(t, ens.Servers())
	const name, owner = "partial-release", "owner"
	req := engine.AcquireRequest{Name: name, Owner: owner, TTL: 10 * time.Second}
	if g, err := e.Acquire(ctx, req); err != nil || !g.Acquired {
		t.Fatalf("first hold: %+v, %v", g, err)
	}
	// The second hold's ttl reaches further: its expiry is a ttl from the
	// write (the node's mtime).
	req.TTL = 20 * time.Second
	if g, err := e.Acquire(ctx, req); err != nil || g.Count != 2 {
		t.Fatalf("second hold: %+v, %v", g, err)
	}
	// Wait until the ensemble's clock has moved on from the re-entry.
	var left time.Duration
	for {
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if left = info.TTL; left <= req.TTL-300*time.Millisecond {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lease's time left stays at %v", left)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if res, err := e.Release(ctx, name, owner); err != nil || res.Remaining != 1 {
		t.Fatalf("release of one hold: %+v, %v", res, err)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.TTL > left {
		t.Fatalf("after dropping a hold: held %v with %v left, want held with at most the %v left before", info.Held, info.TTL, left)
	}
}
