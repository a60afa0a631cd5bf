package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// TestFenceIsolationUpgrade: on a version 14 schema (testdata) pgfence's
// HighestSeen, run in a REPEATABLE READ transaction that read before its
// holder was force-released and the name granted to another, reads the
// high-waters from its snapshot and accepts the deposed holder's token;
// Migrate brings it to version 15 with the newer grant held across it,
// and then the same check is refused as needing READ COMMITTED
// (*pgfence.IsolationError, no mark written), while at READ COMMITTED the
// deposed token is refused and the newer holder's accepted, as before.
func TestFenceIsolationUpgrade(t *testing.T) {
	const schema = "upgrade_v14"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v14.sql")
	e := newEngine(t, newPool(t), schema)
	name := uniqueName(t)
	acquire := func(owner string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute})
		if err != nil || !g.Acquired {
			t.Fatalf("%s: %+v, %v", owner, g, err)
		}
		return g.Token
	}
	hs := pgfence.New(schema, pgfence.HighestSeen)
	// staleCheck opens a REPEATABLE READ transaction, reads, lets depose
	// run (A force-released and B granted), then checks A's token; the
	// transaction is rolled back.
	staleCheck := func(old uint64, depose func()) error {
		t.Helper()
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM `+schema+`.version`); err != nil { // the snapshot
			t.Fatal(err)
		}
		depose()
		return hs.Check(ctx, tx, name, old, "a")
	}
	forceRelease := func() {
		t.Helper()
		if ok, err := e.ForceRelease(ctx, name); err != nil || !ok {
			t.Fatalf("force-release: %v, %v", ok, err)
		}
	}

	old := acquire("a")
	var newer uint64
	if err := staleCheck(old, func() { forceRelease(); newer = acquire("b") }); err != nil {
		t.Fatalf("version 14: the deposed holder's check at repeatable read: %v; want accepted (the flaw version 15 mends)", err)
	}

	upgrade(t, ctx, pool, schema) // b's grant held across it

	// The same check at version 15, b still holding the name.
	err := staleCheck(old, func() {})
	var ie *pgfence.IsolationError
	if !errors.Is(err, pgfence.ErrInvalidArgument) || !errors.As(err, &ie) || ie.Isolation != "repeatable read" {
		t.Fatalf("after the upgrade: the deposed holder's check at repeatable read: %v; want an *IsolationError (repeatable read)", err)
	}
	var marks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.fence_marks WHERE name = $1`, name).Scan(&marks); err != nil || marks != 0 {
		t.Fatalf("after the refused check: %d marks (%v), want 0", marks, err)
	}
	if err := highestSeen(ctx, pool, schema, name, old, "a"); !errors.Is(err, pgfence.ErrStale) {
		t.Fatalf("after the upgrade: the deposed holder's check at read committed: %v; want ErrStale", err)
	}
	if err := highestSeen(ctx, pool, schema, name, newer, "b"); err != nil {
		t.Fatalf("after the upgrade: the newer holder's check at read committed: %v", err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
