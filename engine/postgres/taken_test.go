package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestTakenUpgrade: on a version 3 schema (testdata), a force-release of a
// mutex leaves its holder no mark (its renewal is answered missing: lost as
// expired, the flaw), and a shared holder's mark is in shared_taken.
// Migrate brings it to version 4: the mark moves to taken and still answers
// the holder's renewal taken over, shared_taken is gone, extend_shared_taken
// still answers for processes of version 3, a lease held across the upgrade
// still renews, and a mutex's force-release now marks its holder taken over.
func TestTakenUpgrade(t *testing.T) {
	const schema = "upgrade_v3_taken"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v3.sql")
	e := newEngine(t, pool, schema)
	for _, r := range []engine.AcquireRequest{{Name: "m", Owner: "mo", Attempt: "mo", TTL: time.Minute}, {Name: "x", Owner: "xo", Attempt: "xo", TTL: time.Minute}} {
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("%s: %+v, %v", r.Name, g, err)
		}
	}
	permit := engine.AcquireRequest{Name: "s", Owner: "a", Attempt: "a", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1}
	if g, err := e.Acquire(ctx, permit); err != nil || !g.Acquired {
		t.Fatalf("a permit: %+v, %v", g, err)
	}
	// Version 3's own functions (this engine calls version 4's).
	var n int32
	var held bool
	if err := pool.QueryRow(ctx, `SELECT upgrade_v3_taken.force_release_shared('s'), upgrade_v3_taken.force_release('x')`).Scan(&n, &held); err != nil || n != 1 || !held {
		t.Fatalf("force-release on version 3: %d, %v, %v", n, held, err)
	}
	if res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "x", Owner: "xo", TTL: time.Minute}}); err != nil || res[0].Status != engine.Missing {
		t.Fatalf("on version 3 the freed mutex holder's renewal: %+v, %v; the scenario no longer shows the flaw", res, err)
	}
	for range 2 {
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
	}
	var version int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM upgrade_v3_taken.version`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("version %d (%v), want %d", version, err, postgres.SchemaVersion)
	}
	var old *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('upgrade_v3_taken.shared_taken')::text`).Scan(&old); err != nil || old != nil {
		t.Fatalf("shared_taken after the upgrade: %v, %v", old, err)
	}
	res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "s", Owner: "a", TTL: time.Minute, Kind: engine.Semaphore}, {Name: "m", Owner: "mo", TTL: time.Minute}})
	if err != nil || res[0].Status != engine.HeldByOther || res[1].Status != engine.Extended {
		t.Fatalf("after the upgrade: %+v, %v; want the freed holder taken over, the mutex held across it extended", res, err)
	}
	var status int32
	if err := pool.QueryRow(ctx, `SELECT o_status FROM upgrade_v3_taken.extend_shared_taken(ARRAY['s'], ARRAY['a'], ARRAY[60000000::bigint], ARRAY[false])`).Scan(&status); err != nil || status != 3 {
		t.Fatalf("extend_shared_taken, as a version 3 process calls it: %d, %v; want 3", status, err)
	}
	if held, err := e.ForceRelease(ctx, "m"); err != nil || !held {
		t.Fatalf("ForceRelease(m) = %v, %v", held, err)
	}
	if res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "m", Owner: "mo", TTL: time.Minute}}); err != nil || res[0].Status != engine.HeldByOther {
		t.Fatalf("the freed mutex holder's renewal after the upgrade: %+v, %v; want held by other (taken over)", res, err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// TestTakenSwept: the marks a force-release leaves (table taken) go when
// the freed lease would have ended: Sweep deletes the rows past their end,
// and so does the next force-release of the name, while the rows whose
// lease would still run stay (a freed holder that never renews leaves
// nothing behind for long).
func TestTakenSwept(t *testing.T) {
	const schema = "taken_swept"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, schema)
	force := func(name, owner string, ttl time.Duration, shared bool) {
		t.Helper()
		var err error
		if shared {
			_, err = e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: ttl, Kind: engine.Semaphore, Limit: 2, Weight: 1})
		} else {
			_, err = e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: ttl})
		}
		if err != nil {
			t.Fatal(err)
		}
		if held, err := e.ForceRelease(ctx, name); err != nil || !held {
			t.Fatalf("ForceRelease(%s) = %v, %v", name, held, err)
		}
	}
	marks := func() []string {
		t.Helper()
		var owners []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(owner ORDER BY owner), '{}') FROM taken_swept.taken`).Scan(&owners); err != nil {
			t.Fatal(err)
		}
		return owners
	}
	force("m", "short-m", 300*time.Millisecond, false)
	force("s", "short-s", 300*time.Millisecond, true)
	force("s", "long-s", time.Minute, true)
	if got := marks(); len(got) != 3 {
		t.Fatalf("marks %v, want 3", got)
	}
	waitFor(t, "the short leases' end in database time", func() bool {
		var ended bool
		err := pool.QueryRow(ctx, `SELECT bool_and(until <= clock_timestamp()) FROM taken_swept.taken WHERE owner LIKE 'short-%'`).Scan(&ended)
		return err == nil && ended
	})
	force("s", "long-s2", time.Minute, true) // prunes short-s, the name's
	if got := marks(); len(got) != 3 || got[2] != "short-m" {
		t.Fatalf("after a force-release of s: marks %v, want long-s, long-s2, short-m", got)
	}
	if _, err := e.Sweep(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if got := marks(); len(got) != 2 || got[0] != "long-s" || got[1] != "long-s2" {
		t.Fatalf("after Sweep: marks %v, want long-s, long-s2", got)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
