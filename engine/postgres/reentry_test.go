package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestReentryExpiryUpgrade: on a version 3 schema (testdata), a re-entry
// with a short ttl cuts the expiry of the owner's long hold (the flaw
// ReentryExpiry catches); Migrate brings it to the current version,
// keeping the lease held across it, and then neither a short re-entry nor
// a short extension of one of two holds moves the expiry earlier, on a
// mutex and on a semaphore's holder.
func TestReentryExpiryUpgrade(t *testing.T) {
	const schema = "upgrade_v3_reentry"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v3.sql")
	e := newEngine(t, pool, schema)
	const long, short = time.Minute, 300 * time.Millisecond
	mutex := func(name, attempt string, ttl time.Duration) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: "o", Attempt: attempt, TTL: ttl}
	}
	acquire := func(r engine.AcquireRequest) {
		t.Helper()
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("%+v: %+v, %v", r, g, err)
		}
	}
	ttl := func(name string) time.Duration {
		t.Helper()
		info, err := e.Inspect(ctx, name)
		if err != nil || !info.Held {
			t.Fatalf("inspect %s: %+v, %v", name, info, err)
		}
		return info.TTL
	}
	acquire(mutex("old", "a1", long))
	acquire(mutex("old", "a2", short))
	if left := ttl("old"); left > short {
		t.Fatalf("on version 3 a short re-entry left %v: the scenario no longer shows the flaw", left)
	}
	acquire(mutex("kept", "a1", long))
	upgrade(t, ctx, pool, schema)
	acquire(mutex("kept", "a2", short))
	if left := ttl("kept"); left < long/2 {
		t.Fatalf("the lease held across the upgrade, re-entered with %v: %v left", short, left)
	}
	if rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "kept", Owner: "o", TTL: short}}); err != nil || rs[0].Status != engine.Extended {
		t.Fatalf("extend: %+v, %v", rs, err)
	} else if left := ttl("kept"); left < long/2 {
		t.Fatalf("one of two holds extended by %v: %v left", short, left)
	}
	permit := func(attempt string, ttl time.Duration) engine.AcquireRequest {
		r := mutex("s", attempt, ttl)
		r.Kind, r.Limit, r.Weight = engine.Semaphore, 2, 1
		return r
	}
	for _, r := range []engine.AcquireRequest{permit("a1", long), permit("a2", short)} {
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("%+v: %+v, %v", r, g, err)
		}
	}
	info, err := e.Inspect(ctx, "s")
	if err != nil || len(info.Holders) != 1 || info.Holders[0].TTL < long/2 {
		t.Fatalf("a permit re-entered with %v: %+v, %v", short, info, err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
