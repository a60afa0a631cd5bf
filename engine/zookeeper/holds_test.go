package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
)

// TestPartialReleaseKeepsExpiry: a release that drops one of two holds
// rewrites the holder's node (its count), which moves the node's mtime;
// the lease must still end when it did. Before, a hold written with its
// ttl from the node's mtime was extended by the release to a whole ttl
// from then (the checker once saw the holder live past its deadline).
func TestPartialReleaseKeepsExpiry(t *testing.T) {
	t.Parallel()
	ctx, e, req := firstHold(t, "partial-release", 10*time.Second)
	const name, owner = "partial-release", "owner"
	// The second hold's ttl reaches further: its expiry is a ttl from the
	// write (the node's mtime).
	req.TTL = 20 * time.Second
	if g, err := e.Acquire(ctx, req); err != nil || g.Count != 2 {
		t.Fatalf("second hold: %+v, %v", g, err)
	}
	// Wait until the ensemble's clock has moved on from the re-entry.
	left := waitTTL(ctx, t, func() time.Duration {
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info.TTL
	}, req.TTL-300*time.Millisecond)
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err != nil || res.Remaining != 1 {
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

// TestReentryExpiryFromNow: a re-entry's ttl runs from the re-entry (its
// write), as the Client's deadline does, even when nothing was written to
// the name since the first hold (the reading's clock estimate is that
// hold's time): the engine must not keep the first hold's nearer expiry.
func TestReentryExpiryFromNow(t *testing.T) {
	t.Parallel()
	first, again := 3*time.Second, 2500*time.Millisecond
	ctx, e, req := firstHold(t, "reentry-from-now", first)
	const name = "reentry-from-now"
	// Wait until the ensemble's clock is 1 s past the first hold.
	waitTTL(ctx, t, func() time.Duration {
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info.TTL
	}, first-time.Second)
	req.TTL = again
	if g, err := e.Acquire(ctx, req); err != nil || g.Count != 2 {
		t.Fatalf("re-entry: %+v, %v", g, err)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if slack := 200 * time.Millisecond; info.TTL < again-slack {
		t.Fatalf("after a re-entry with ttl %v: %v left, want the re-entry's ttl from its write", again, info.TTL)
	}
}

// waitTTL waits until ttl() is at most want.
func waitTTL(ctx context.Context, t *testing.T, ttl func() time.Duration, want time.Duration) time.Duration {
	t.Helper()
	for {
		if left := ttl(); left <= want {
			return left
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lease's time left stays above %v", want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// firstHold grants name to "owner" for ttl on an engine of its own (one
// member), and returns the test's context, the engine and the request.
func firstHold(t *testing.T, name string, ttl time.Duration) (context.Context, *zkengine.Engine, engine.AcquireRequest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	e := dial(t, shared(t, 1).Servers())
	req := engine.AcquireRequest{Name: name, Owner: "owner", TTL: ttl}
	if g, err := e.Acquire(ctx, req); err != nil || !g.Acquired {
		t.Fatalf("first hold: %+v, %v", g, err)
	}
	return ctx, e, req
}
