package pgfence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// notTheName checks that err refuses a token as not the name's: it
// matches ErrInvalidArgument, and not ErrStale.
func notTheName(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, pgfence.ErrInvalidArgument) || errors.Is(err, pgfence.ErrStale) {
		t.Fatalf("%s: %v; want ErrInvalidArgument (a token no grant of the name has had)", what, err)
	}
}

// refusedInTx runs g's check of name with token and holder in a
// transaction of its own, then tries to commit it whatever the check
// answered, and returns the check's error; the commit must not go
// through (the transaction was aborted), so nothing the check did stays.
func refusedInTx(t *testing.T, pool *pgxpool.Pool, g *pgfence.Guard, name string, token uint64, holder string) error {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	checkErr := g.Check(ctx, tx, name, token, holder)
	if checkErr == nil {
		t.Fatalf("check %q with token %d: accepted", name, token)
	}
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) && err != nil {
		t.Fatalf("commit after the refused check: %v", err)
	}
	return checkErr
}

// TestHighestSeenForeignToken: HighestSeen refuses a token that no grant
// of the name has had, another name's lease's token (newer than the
// name's grant) or one not minted yet, as not the name's
// (ErrInvalidArgument), records nothing (no mark, or the mark as it was),
// and the name's real holders are then accepted, grant after grant (the
// repro: the foreign token was recorded and every later real grant
// refused as stale, for good). A token above engine.MaxToken (2^60) is
// refused before anything is sent; the function refuses it too, called
// directly (SQLSTATE DL003). database/sql's CheckSQL maps the refusal the
// same way.
func TestHighestSeenForeignToken(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := pgfence.New(schema, pgfence.HighestSeen)
	ttl := distlock.WithTTL(10 * time.Second)
	orders, invoices := name(t)+"-orders", name(t)+"-invoices"

	// Another name's lease's token.
	o, err := c.Acquire(ctx, orders, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = o.Release(ctx) }()
	inv, err := c.Acquire(ctx, invoices, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inv.Release(ctx) }()
	if inv.Token() <= o.Token() {
		t.Fatalf("invoices' token %d is not above orders' %d", inv.Token(), o.Token())
	}
	notTheName(t, "orders checked with invoices' token, no mark yet", refusedInTx(t, pool, g, orders, inv.Token(), inv.Owner()))
	if m := mark(t, pool, orders); m != "none" {
		t.Fatalf("orders' mark after the refused check: %s; want none", m)
	}
	if err := check(t, pool, g, o); err != nil {
		t.Fatalf("orders' holder after the refused check: %v", err)
	}
	before := mark(t, pool, orders)
	notTheName(t, "orders checked with invoices' token, after orders' write", refusedInTx(t, pool, g, orders, inv.Token(), o.Owner()))
	if m := mark(t, pool, orders); m != before {
		t.Fatalf("orders' mark after the refused check: %s; want %s", m, before)
	}
	if err := check(t, pool, g, o); err != nil {
		t.Fatalf("orders' holder again: %v", err)
	}

	// A token no grant has had yet: 2^60 is refused before anything is
	// sent, engine.MaxToken by the database.
	reports := name(t) + "-reports"
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return g.Check(ctx, tx, reports, 1<<60, "typo") }); !errors.Is(err, pgfence.ErrInvalidArgument) {
		t.Fatalf("check with 2^60: %v; want ErrInvalidArgument", err)
	}
	notTheName(t, "check with engine.MaxToken", refusedInTx(t, pool, g, reports, engine.MaxToken, "typo"))
	_, err = pool.Exec(ctx, `SELECT * FROM `+schema+`.fence_check($1, $2, 'typo', 2)`, reports, int64(1)<<60)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "DL003" {
		t.Fatalf("fence_check with 2^60, called directly: %v; want SQLSTATE DL003", err)
	}
	if m := mark(t, pool, reports); m != "none" {
		t.Fatalf("reports' mark after the refused checks: %s; want none", m)
	}
	for i := range 3 {
		l, err := c.Acquire(ctx, reports, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(t, pool, g, l); err != nil {
			t.Fatalf("reports' grant %d (token %d): %v", i, l.Token(), err)
		}
		notTheName(t, "reports checked with the next token", refusedInTx(t, pool, g, reports, l.Token()+1, l.Owner()))
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// database/sql.
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	notTheName(t, "CheckSQL of orders with invoices' token", g.CheckSQL(ctx, tx, orders, inv.Token(), inv.Owner()))
}
