package pgfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

const schema = "fenced"

// setup returns a pool on the test server with schema migrated, and a
// Client on an engine of its own.
func setup(t *testing.T) (*pgxpool.Pool, *distlock.Client) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	eng, err := postgres.New(pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng)
	t.Cleanup(func() { _ = c.Close(); _ = eng.Close() })
	return pool, c
}

func name(t *testing.T) string { return fmt.Sprintf("%s-%x", t.Name(), rand.Uint64()) }

// check runs one guard check in a transaction of its own and commits it
// when the check passes.
func check(t *testing.T, pool *pgxpool.Pool, g *pgfence.Guard, l *distlock.Lease) error {
	t.Helper()
	return pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		return g.Check(context.Background(), tx, l.Name(), l.Token(), l.Owner())
	})
}

// shortTTL is the ttl of the leases the tests let expire: short, so the
// wait for the expiry is short, yet long enough that the grant's answer
// comes back within it on a busy machine (a grant answered after its ttl
// fails the Acquire: its validity, ttl less drift, was used up; 100ms
// leaves a loaded machine little room).
const shortTTL = 500 * time.Millisecond

// expired waits until l's lease has run out on the database: its row says
// so by clock_timestamp() (the local loss signal comes earlier, by design).
func expired(t *testing.T, pool *pgxpool.Pool, l *distlock.Lease) {
	t.Helper()
	<-l.Done()
	end := time.Now().Add(10 * time.Second)
	for {
		var live bool
		err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM `+schema+`.locks WHERE name = $1 AND owner IS NOT NULL AND expires_at > clock_timestamp())`, l.Name()).Scan(&live)
		if err == nil && !live {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%q still live on the database 10s after its lease ended locally (%v)", l.Name(), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitBlocked waits until a session of the database waits for a row lock
// (the call the open fenced transaction holds back), for up to 10s (a
// starved machine's limit, not a speed).
func waitBlocked(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no session waits for a lock after 10s (%v)", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantStale(t *testing.T, what string, err error) {
	t.Helper()
	var se *pgfence.StaleError
	if !errors.Is(err, pgfence.ErrStale) || !errors.As(err, &se) {
		t.Fatalf("%s: %v, want a *StaleError", what, err)
	}
}

// TestCurrent: only the current, unexpired grant passes; a released,
// expired or deposed lease does not, nor does another owner's token.
func TestCurrent(t *testing.T) {
	pool, c := setup(t)
	ctx := context.Background()
	g := pgfence.New(schema, pgfence.Current)
	n := name(t)
	l, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, pool, g, l); err != nil {
		t.Fatalf("the holder: %v", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return g.Check(ctx, tx, n, l.Token(), "someone else") })
	wantStale(t, "the holder's token from another owner", err)
	if _, err := c.ForceRelease(ctx, n); err != nil {
		t.Fatal(err)
	}
	wantStale(t, "a force-released lease, nobody else holding", check(t, pool, g, l))
	next, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wantStale(t, "the deposed holder", check(t, pool, g, l))
	if err := check(t, pool, g, next); err != nil {
		t.Fatalf("the next holder: %v", err)
	}
	_ = next.Release(ctx)

	short, err := c.Acquire(ctx, name(t), distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	expired(t, pool, short)
	wantStale(t, "an expired lease", check(t, pool, g, short))
}

// TestCurrentHoldsTheRow: while a transaction that passed a Current check
// is open, no other grant of the name can commit: a force-release (and so
// any new grant) waits for the transaction.
func TestCurrentHoldsTheRow(t *testing.T) {
	pool, c := setup(t)
	ctx := context.Background()
	g := pgfence.New(schema, pgfence.Current)
	n := name(t)
	l, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := g.Check(ctx, tx, n, l.Token(), l.Owner()); err != nil {
		t.Fatal(err)
	}
	done := make(chan time.Time, 1)
	go func() {
		if _, err := c.ForceRelease(ctx, n); err != nil {
			t.Error(err)
		}
		done <- time.Now()
	}()
	waitBlocked(t, pool)
	select {
	case <-done:
		t.Fatal("the force-release committed while the fenced transaction was open")
	default:
	}
	committed := time.Now()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if at := <-done; at.Before(committed) {
		t.Fatal("the force-release returned before the commit")
	}
}

// TestCurrentShared: Current accepts a shared lock's live holder (a
// reader, a writer) with its token, and holds its permits until the
// commit: a writer waiting for the checked reader is granted only after
// it; a released reader's token is stale.
func TestCurrentShared(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := pgfence.New(schema, pgfence.Current)
	n := name(t)
	r1, err := c.RWMutex(n).RLock(ctx, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.RWMutex(n).RLock(ctx, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, pool, g, r1); err != nil {
		t.Fatalf("a reader: %v", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return g.Check(ctx, tx, n, r2.Token(), r1.Owner()) })
	wantStale(t, "another reader's token", err)
	if err := r2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantStale(t, "a released reader", check(t, pool, g, r2))

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := g.Check(ctx, tx, n, r1.Token(), r1.Owner()); err != nil {
		t.Fatal(err)
	}
	type grant struct {
		l  *distlock.Lease
		at time.Time
	}
	got := make(chan grant, 1)
	go func() {
		w, err := c.RWMutex(n).Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- grant{w, time.Now()}
	}()
	released := make(chan error, 1)
	go func() { released <- r1.Release(ctx) }() // waits for the fenced transaction
	waitBlocked(t, pool)
	select {
	case err := <-released:
		t.Fatalf("the reader's release returned (%v) while its fenced transaction was open", err)
	case <-got:
		t.Fatal("the writer was granted while the reader's fenced transaction was open")
	default:
	}
	committed := time.Now()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	w := <-got
	if w.l == nil {
		t.FailNow()
	}
	if w.at.Before(committed) {
		t.Fatal("the writer was granted before the reader's fenced transaction committed")
	}
	if err := check(t, pool, g, w.l); err != nil {
		t.Fatalf("the writer: %v", err)
	}
	wantStale(t, "a reader before the writer", check(t, pool, g, r1))
	_ = w.l.Release(ctx)
}

// TestHighestSeen: the fence rule of package fence, with the lock table's
// knowledge on top: a token below the highest accepted is refused, a tie
// only from the same holder; a token older than the current grant is
// refused even before the new holder writes; a lease that expired with
// nobody after it may still write.
func TestHighestSeen(t *testing.T) {
	pool, c := setup(t)
	ctx := context.Background()
	g := pgfence.New(schema, pgfence.HighestSeen)
	n := name(t)
	first, err := c.Acquire(ctx, n, distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, pool, g, first); err != nil {
		t.Fatal(err)
	}
	if err := check(t, pool, g, first); err != nil {
		t.Fatalf("the same holder again: %v", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return g.Check(ctx, tx, n, first.Token(), "impostor") })
	wantStale(t, "a tie from another holder", err)
	expired(t, pool, first)
	if err := check(t, pool, g, first); err != nil {
		t.Fatalf("an expired lease with nobody after it: %v", err)
	}
	second, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wantStale(t, "the old token once a newer grant exists, before its first write", check(t, pool, g, first))
	if err := check(t, pool, g, second); err != nil {
		t.Fatal(err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantStale(t, "the old token after the newer holder wrote and left", check(t, pool, g, first))
}

// TestCheckSQL: the same check through database/sql (pgx's stdlib
// driver); a refused check's transaction is rolled back by the caller.
func TestCheckSQL(t *testing.T) {
	pool, c := setup(t)
	ctx := context.Background()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	g := pgfence.New(schema, pgfence.Current)
	n := name(t)
	l, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	run := func() error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := g.CheckSQL(ctx, tx, n, l.Token(), l.Owner()); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantStale(t, "after the release", run())
}

// TestBadInput: bad arguments are refused before anything is sent.
func TestBadInput(t *testing.T) {
	pool, _ := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		g      *pgfence.Guard
		name   string
		token  uint64
		holder string
	}{
		{pgfence.New(schema, pgfence.Current), "", 1, "h"},
		{pgfence.New(schema, pgfence.Current), "n", 0, "h"},
		{pgfence.New(schema, pgfence.Current), "n", 1 << 63, "h"},
		{pgfence.New(schema, pgfence.HighestSeen), "n", engine.MaxToken + 1, "h"},
		{pgfence.New(schema, pgfence.Current), "n", 1, ""},
		{pgfence.New(schema, pgfence.HighestSeen), "n\x00", 1, "h"},
		{pgfence.New(schema, pgfence.Mode(7)), "n", 1, "h"},
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tc.g.Check(ctx, tx, tc.name, tc.token, tc.holder) })
		if !errors.Is(err, pgfence.ErrInvalidArgument) {
			t.Errorf("%q %d %q: %v, want ErrInvalidArgument", tc.name, tc.token, tc.holder, err)
		}
	}
}
