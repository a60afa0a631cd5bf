package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestSharedReleaseOnceUpgrade: on a version 19 schema (testdata), whose
// release_shared records no release ids, a shared lock's ReleaseOnce is
// answered unsupported (errors.ErrUnsupported) and drops nothing, so the
// Client releases plainly; Migrate brings the schema to the current
// version with the reader's holds kept across it; the engine, once its
// v19Recheck has passed, releases a shared hold once (a copy with the same
// id drops no second hold), and version 19's signature still drops one
// hold for processes of that version.
func TestSharedReleaseOnceUpgrade(t *testing.T) {
	const schema = "upgrade_v19"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v19.sql")
	e := newEngine(t, newPool(t), schema)
	name := uniqueName(t)
	read := func(attempt string) {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "reader", Attempt: attempt, TTL: time.Minute,
			Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1})
		if err != nil || !g.Acquired {
			t.Fatalf("read lock: %+v, %v", g, err)
		}
	}
	holds := func(what string, want int) {
		t.Helper()
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, h := range info.Holders {
			if h.Owner == "reader" {
				got = h.Count
			}
		}
		if got != want {
			t.Fatalf("%s: the reader holds %d times, want %d: %+v", what, got, want, info)
		}
	}
	rel := engine.ReleaseRequest{Name: name, Owner: "reader", Kind: engine.RWLock}
	for _, a := range []string{"a1", "a2", "a3"} {
		read(a)
	}
	if _, err := e.ReleaseOnce(ctx, rel, "r1"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("a shared ReleaseOnce on a version 19 schema: %v; want errors.ErrUnsupported", err)
	}
	if !e.V19() {
		t.Fatal("the engine on a version 19 schema does not answer shared ReleaseOnce unsupported")
	}
	holds("after the refused ReleaseOnce", 3)

	upgrade(t, ctx, pool, schema) // the reader's holds kept across it
	holds("after the upgrade", 3)
	e.EndV19() // as v19Recheck's passing
	for copy := range 2 {
		if r, err := e.ReleaseOnce(ctx, rel, "r1"); err != nil || r.Status != engine.Released || r.Remaining != 2 {
			t.Fatalf("copy %d of ReleaseOnce r1: %+v, %v; want Released with 2 holds left", copy, r, err)
		}
	}
	holds("after two copies of one release", 2)
	if e.V19() {
		t.Fatal("the engine answers shared ReleaseOnce unsupported after the upgrade")
	}
	// Version 19's signature, for processes of that version: one hold each call.
	var status, remaining int32
	if err := pool.QueryRow(ctx, "SELECT * FROM "+schema+".release_shared($1, $2, 0::bigint, $3)", name, "reader", int32(engine.RWLock)).Scan(&status, &remaining); err != nil || status != 1 || remaining != 1 {
		t.Fatalf("version 19's release_shared: %d, %d, %v; want released with 1 hold left", status, remaining, err)
	}
	holds("after version 19's release", 1)
}
