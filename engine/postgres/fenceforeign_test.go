package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// fenceMark is name's row of fence_marks in schema, as a string ("none"
// when there is none).
func fenceMark(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema, name string) string {
	t.Helper()
	var token, granted int64
	var holder string
	err := pool.QueryRow(ctx, `SELECT token, holder, granted FROM `+schema+`.fence_marks WHERE name = $1`, name).
		Scan(&token, &holder, &granted)
	if errors.Is(err, pgx.ErrNoRows) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("token %d, holder %q, granted %d", token, holder, granted)
}

// TestFenceForeignTokenUpgrade: on a version 18 schema (testdata)
// pgfence's HighestSeen records a token no grant of the name has had,
// another name's lease's or engine.MaxToken, and then refuses the name's
// real holder as stale (the flaw version 19 mends); Migrate brings it to
// the current version with the holders held across it, resets those marks
// (and leaves a real one as it was), and then the real holders are
// accepted and the foreign tokens refused as not the name's
// (ErrInvalidArgument).
func TestFenceForeignTokenUpgrade(t *testing.T) {
	const schema = "upgrade_v18_fence"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v18.sql")
	e := newEngine(t, newPool(t), schema)
	p := uniqueName(t) + "/"
	orders, invoices, reports, ledger := p+"orders", p+"invoices", p+"reports", p+"ledger"
	acquire := func(name string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "h", Attempt: name, TTL: time.Minute})
		if err != nil || !g.Acquired {
			t.Fatalf("acquire %s: %+v, %v", name, g, err)
		}
		return g.Token
	}
	tl := acquire(ledger)
	to, ti, tr := acquire(orders), acquire(invoices), acquire(reports)

	// Version 18: the flaw.
	for _, c := range []struct {
		name        string
		foreign, tk uint64
	}{{orders, ti, to}, {reports, engine.MaxToken, tr}} {
		if err := highestSeen(ctx, pool, schema, c.name, c.foreign, "h"); err != nil {
			t.Fatalf("version 18: %s checked with token %d: %v; want accepted (the flaw version 19 mends)", c.name, c.foreign, err)
		}
		if err := highestSeen(ctx, pool, schema, c.name, c.tk, "h"); !errors.Is(err, pgfence.ErrStale) {
			t.Fatalf("version 18: %s's holder (token %d) after the foreign token: %v; want ErrStale", c.name, c.tk, err)
		}
	}
	if err := highestSeen(ctx, pool, schema, ledger, tl, "h"); err != nil {
		t.Fatal(err)
	}
	ledgerMark := fenceMark(t, ctx, pool, schema, ledger)

	upgrade(t, ctx, pool, schema) // every holder held across it

	for _, n := range []string{orders, reports} {
		if m, want := fenceMark(t, ctx, pool, schema, n), `token 0, holder "", granted 0`; m != want {
			t.Errorf("%s's mark after the upgrade: %s; want %s (reset)", n, m, want)
		}
	}
	if m := fenceMark(t, ctx, pool, schema, ledger); m != ledgerMark {
		t.Errorf("ledger's mark after the upgrade: %s; want %s (as it was)", m, ledgerMark)
	}
	for _, c := range []struct {
		name        string
		foreign, tk uint64
	}{{orders, ti, to}, {reports, engine.MaxToken, tr}, {ledger, tr, tl}} {
		if err := highestSeen(ctx, pool, schema, c.name, c.foreign, "h"); !errors.Is(err, pgfence.ErrInvalidArgument) {
			t.Errorf("after the upgrade: %s checked with token %d: %v; want ErrInvalidArgument", c.name, c.foreign, err)
		}
		if err := highestSeen(ctx, pool, schema, c.name, c.tk, "h"); err != nil {
			t.Errorf("after the upgrade: %s's holder (token %d): %v; want accepted", c.name, c.tk, err)
		}
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
