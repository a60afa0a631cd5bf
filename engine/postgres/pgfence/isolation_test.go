package pgfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// The isolation tests (from an outside tester's report): holder A opens
// its write transaction at REPEATABLE READ or SERIALIZABLE and reads
// something first, so the transaction's snapshot is taken; then A is
// deposed (force-released, or its lease runs out as a paused holder's)
// and B is granted the lock, committed, without writing; then A's
// transaction runs the check with A's token, writes and commits. Before
// schema version 15 HighestSeen read the name's high-waters from the
// snapshot, missed B's grant, and A's stale write committed. Since, it
// refuses to run outside READ COMMITTED (*IsolationError, nothing
// changed); READ COMMITTED refuses the stale token as before, and Current
// refuses at every level (a serialization failure at REPEATABLE READ and
// SERIALIZABLE, or a refusal).

// isoData is the table the tests' guarded writes go to.
const isoData = "pgfence_iso_data"

func isoTable(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS `+isoData+` (name text PRIMARY KEY, value text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

// guardedWrite sets name's value in isoData in a READ COMMITTED
// transaction guarded by g's check of l.
func guardedWrite(t *testing.T, pool *pgxpool.Pool, g *pgfence.Guard, l *distlock.Lease, value string) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := g.Check(ctx, tx, l.Name(), l.Token(), l.Owner()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+isoData+` (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = $2`, l.Name(), value)
		return err
	})
	if err != nil {
		t.Fatalf("%s's guarded write: %v", value, err)
	}
}

// value is name's value in isoData ("" for none).
func value(t *testing.T, pool *pgxpool.Pool, name string) string {
	t.Helper()
	var v string
	err := pool.QueryRow(context.Background(), `SELECT value FROM `+isoData+` WHERE name = $1`, name).Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return v
}

// mark is name's row of fence_marks, as a string ("none" when there is
// none), to compare before and after a check.
func mark(t *testing.T, pool *pgxpool.Pool, name string) string {
	t.Helper()
	var token, granted int64
	var holder string
	err := pool.QueryRow(context.Background(), `SELECT token, holder, granted FROM `+schema+`.fence_marks WHERE name = $1`, name).Scan(&token, &holder, &granted)
	if errors.Is(err, pgx.ErrNoRows) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("token %d, holder %q, granted %d", token, holder, granted)
}

// staleWrite runs A's check with g in tx (opened, and read from, before A
// was deposed), and when it passes, A's write and the commit; it returns
// the first error (nil: the stale write committed).
func staleWrite(ctx context.Context, tx pgx.Tx, g *pgfence.Guard, a *distlock.Lease) error {
	err := g.Check(ctx, tx, a.Name(), a.Token(), a.Owner())
	if err == nil {
		_, err = tx.Exec(ctx, `INSERT INTO `+isoData+` (name, value) VALUES ($1, 'stale') ON CONFLICT (name) DO UPDATE SET value = 'stale'`, a.Name())
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	return err
}

// wantIsolation fails unless err is HighestSeen's refusal at level.
func wantIsolation(t *testing.T, what string, err error, level string) {
	t.Helper()
	var ie *pgfence.IsolationError
	if !errors.Is(err, pgfence.ErrInvalidArgument) || !errors.As(err, &ie) || errors.Is(err, pgfence.ErrStale) {
		t.Fatalf("%s: %v, want an *IsolationError matching ErrInvalidArgument", what, err)
	}
	if ie.Isolation != level {
		t.Fatalf("%s: %v: the level %q, want %q", what, err, ie.Isolation, level)
	}
}

// wantRefused checks the answer of staleWrite for mode at iso: at READ
// COMMITTED a *StaleError; HighestSeen at the other levels an
// *IsolationError; Current there a *StaleError or a serialization failure.
func wantRefused(t *testing.T, err error, mode pgfence.Mode, iso pgx.TxIsoLevel) {
	t.Helper()
	what := fmt.Sprintf("%s at %s, the deposed holder's check after a newer grant committed", mode, iso)
	switch {
	case err == nil:
		t.Fatalf("%s: accepted, and its write committed", what)
	case iso == pgx.ReadCommitted:
		wantStale(t, what, err)
	case mode == pgfence.HighestSeen:
		wantIsolation(t, what, err, isoName(iso))
	default:
		var pe *pgconn.PgError
		if !errors.Is(err, pgfence.ErrStale) && (!errors.As(err, &pe) || pe.Code != "40001") {
			t.Fatalf("%s: %v, want a *StaleError or a serialization failure (40001)", what, err)
		}
	}
}

// isoName is iso as PostgreSQL's transaction_isolation names it.
func isoName(iso pgx.TxIsoLevel) string {
	switch iso {
	case pgx.RepeatableRead:
		return "repeatable read"
	case pgx.Serializable:
		return "serializable"
	case pgx.ReadUncommitted:
		return "read uncommitted"
	}
	return "read committed"
}

var isoLevels = []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable, pgx.ReadCommitted}

// TestIsolationForceReleased: A force-released by an admin after its
// transaction began, B granted (committed) and not writing, A's check in
// the open transaction: refused at every level and mode, and the stale
// write never commits; HighestSeen outside READ COMMITTED changes
// nothing (the name's mark, or its absence, stays as it was).
func TestIsolationForceReleased(t *testing.T) {
	pool, c := setup(t)
	isoTable(t, pool)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs := pgfence.New(schema, pgfence.HighestSeen)
	for _, iso := range isoLevels {
		for _, mode := range []pgfence.Mode{pgfence.HighestSeen, pgfence.Current} {
			for _, marked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/marked=%v", iso, mode, marked), func(t *testing.T) {
					n := name(t)
					a, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					if marked { // an earlier guarded write by A: the name has a mark
						guardedWrite(t, pool, hs, a, "a-first")
					}
					tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
					if err != nil {
						t.Fatal(err)
					}
					defer func() { _ = tx.Rollback(ctx) }()
					var rows int
					if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+isoData).Scan(&rows); err != nil { // the snapshot
						t.Fatal(err)
					}
					if ok, err := c.ForceRelease(ctx, n); err != nil || !ok {
						t.Fatalf("force-release: %v, %v", ok, err)
					}
					b, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					defer func() { _ = b.Release(ctx) }()
					if b.Token() <= a.Token() {
						t.Fatalf("B's token %d is not above A's %d", b.Token(), a.Token())
					}
					before, was := mark(t, pool, n), value(t, pool, n)
					wantRefused(t, staleWrite(ctx, tx, pgfence.New(schema, mode), a), mode, iso)
					_ = tx.Rollback(ctx)
					if v := value(t, pool, n); v != was {
						t.Fatalf("the data is %q after the refused check, want %q", v, was)
					}
					if mode == pgfence.HighestSeen && iso != pgx.ReadCommitted {
						if after := mark(t, pool, n); after != before {
							t.Fatalf("the name's mark: %s before the refused check, %s after", before, after)
						}
					}
					// B writes, at READ COMMITTED, as before.
					guardedWrite(t, pool, hs, b, "b")
				})
			}
		}
	}
}

// TestIsolationExpired: the paused holder. A wrote through HighestSeen
// (the name has a mark), opens its transaction and reads; then its lease
// runs out and B is granted the lock (and in one case writes): A's
// HighestSeen check in the open transaction is refused at every level,
// and the stale write never commits.
func TestIsolationExpired(t *testing.T) {
	pool, c := setup(t)
	isoTable(t, pool)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs := pgfence.New(schema, pgfence.HighestSeen)
	for _, iso := range isoLevels {
		for _, bWrites := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bWrites=%v", iso, bWrites), func(t *testing.T) {
				n := name(t)
				a, err := c.Acquire(ctx, n, distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false))
				if err != nil {
					t.Fatal(err)
				}
				guardedWrite(t, pool, hs, a, "a-first")
				tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				var v string
				if err := tx.QueryRow(ctx, `SELECT value FROM `+isoData+` WHERE name = $1`, n).Scan(&v); err != nil { // the snapshot
					t.Fatal(err)
				}
				expired(t, pool, a) // A is paused: no renewal
				b, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = b.Release(ctx) }()
				if bWrites {
					guardedWrite(t, pool, hs, b, "b")
				}
				before, was := mark(t, pool, n), value(t, pool, n)
				wantRefused(t, staleWrite(ctx, tx, hs, a), pgfence.HighestSeen, iso)
				_ = tx.Rollback(ctx)
				if v := value(t, pool, n); v != was {
					t.Fatalf("the data is %q after the refused check, want %q", v, was)
				}
				if iso != pgx.ReadCommitted {
					if after := mark(t, pool, n); after != before {
						t.Fatalf("the name's mark: %s before the refused check, %s after", before, after)
					}
				}
			})
		}
	}
}

// TestIsolationNotJudged: HighestSeen outside READ COMMITTED is refused
// whatever the token, even the current holder's in a transaction whose
// first statement is the check (the level is refused, not the token),
// through database/sql too, and no mark is written; READ UNCOMMITTED,
// which PostgreSQL runs as READ COMMITTED, is judged as READ COMMITTED
// is; Current accepts the current holder at every level.
func TestIsolationNotJudged(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	hs := pgfence.New(schema, pgfence.HighestSeen)
	n := name(t)
	l, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
			return hs.Check(ctx, tx, n, l.Token(), l.Owner())
		})
		wantIsolation(t, fmt.Sprintf("the current holder's HighestSeen check at %s", iso), err, isoName(iso))
		if err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
			return pgfence.New(schema, pgfence.Current).Check(ctx, tx, n, l.Token(), l.Owner())
		}); err != nil {
			t.Fatalf("the current holder's Current check at %s: %v", iso, err)
		}
	}
	for _, level := range []sql.IsolationLevel{sql.LevelRepeatableRead, sql.LevelSerializable} {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
		if err != nil {
			t.Fatal(err)
		}
		err = hs.CheckSQL(ctx, tx, n, l.Token(), l.Owner())
		_ = tx.Rollback()
		want := map[sql.IsolationLevel]string{sql.LevelRepeatableRead: "repeatable read", sql.LevelSerializable: "serializable"}[level]
		wantIsolation(t, fmt.Sprintf("CheckSQL at %s", level), err, want)
	}
	if m := mark(t, pool, n); m != "none" {
		t.Fatalf("the name's mark after the refused checks: %s, want none", m)
	}

	// READ UNCOMMITTED: judged, and the mark written.
	readUncommitted := func(l *distlock.Lease) error {
		return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadUncommitted}, func(tx pgx.Tx) error {
			return hs.Check(ctx, tx, l.Name(), l.Token(), l.Owner())
		})
	}
	if err := readUncommitted(l); err != nil {
		t.Fatalf("the current holder at read uncommitted: %v", err)
	}
	if m := mark(t, pool, n); m == "none" {
		t.Fatal("no mark after the check at read uncommitted")
	}
	if _, err := c.ForceRelease(ctx, n); err != nil {
		t.Fatal(err)
	}
	newer, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = newer.Release(ctx) }()
	wantStale(t, "the deposed holder at read uncommitted", readUncommitted(l))
	if err := readUncommitted(newer); err != nil {
		t.Fatalf("the newer holder at read uncommitted: %v", err)
	}
}
