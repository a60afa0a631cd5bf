package pgfence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// grantKind takes a lease of one kind on a name: a mutex, an RW lock's
// writer, or a semaphore's permit (limit 1: an exclusive holder).
type grantKind struct {
	what    string
	acquire func(ctx context.Context, c *distlock.Client, name string, opts ...distlock.Option) (*distlock.Lease, error)
}

var (
	asMutex = grantKind{"mutex", func(ctx context.Context, c *distlock.Client, n string, opts ...distlock.Option) (*distlock.Lease, error) {
		return c.Acquire(ctx, n, opts...)
	}}
	asWriter = grantKind{"writer", func(ctx context.Context, c *distlock.Client, n string, opts ...distlock.Option) (*distlock.Lease, error) {
		return c.RWMutex(n).Lock(ctx, opts...)
	}}
	asPermit = grantKind{"permit", func(ctx context.Context, c *distlock.Client, n string, opts ...distlock.Option) (*distlock.Lease, error) {
		return c.Semaphore(n, 1).Acquire(ctx, opts...)
	}}
)

// TestHighestSeenNewerGrantOfAnyKind: a holder force-released, then a
// newer grant of the name, of the same kind or another: HighestSeen
// refuses the deposed holder's token before the newer holder's first
// write, accepts the newer holder's, and refuses the old one after it.
// (Schema version 13 compared with the mutex's row alone: every case but
// mutex to mutex was accepted, the shared grants' high-water being kept in
// the shared lock's row.)
func TestHighestSeenNewerGrantOfAnyKind(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := pgfence.New(schema, pgfence.HighestSeen)
	for _, tc := range []struct{ old, newer grantKind }{
		{asMutex, asMutex},
		{asWriter, asWriter},
		{asPermit, asPermit},
		{asMutex, asWriter},
		{asWriter, asMutex},
		{asPermit, asMutex},
	} {
		t.Run(tc.old.what+" then "+tc.newer.what, func(t *testing.T) {
			n := name(t)
			old, err := tc.old.acquire(ctx, c, n, distlock.WithTTL(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ForceRelease(ctx, n); err != nil {
				t.Fatal(err)
			}
			newer, err := tc.newer.acquire(ctx, c, n, distlock.WithTTL(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = newer.Release(ctx) }()
			if newer.Token() <= old.Token() {
				t.Fatalf("the newer grant's token %d is not above the deposed one's %d", newer.Token(), old.Token())
			}
			wantStale(t, "the deposed holder, before the newer holder's first write", check(t, pool, g, old))
			if err := check(t, pool, g, newer); err != nil {
				t.Fatalf("the newer holder: %v", err)
			}
			wantStale(t, "the deposed holder, after the newer holder's write", check(t, pool, g, old))
		})
	}
}

// TestHighestSeenExpiredWriter: a writer whose lease expired may still
// write while nobody newer was granted; once a newer writer is, its token
// is refused even before the newer writer's first write.
func TestHighestSeenExpiredWriter(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := pgfence.New(schema, pgfence.HighestSeen)
	n := name(t)
	first, err := c.RWMutex(n).Lock(ctx, distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	sharedExpired(t, pool, first)
	if err := check(t, pool, g, first); err != nil {
		t.Fatalf("an expired writer with nobody after it: %v", err)
	}
	second, err := c.RWMutex(n).Lock(ctx, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Release(ctx) }()
	wantStale(t, "the expired writer once a newer writer holds the name", check(t, pool, g, first))
	if err := check(t, pool, g, second); err != nil {
		t.Fatalf("the newer writer: %v", err)
	}
}

// TestHighestSeenAfterNewerReleased: a holder deposed (force-released or
// expired), then a newer grant taken and released without writing, which
// deletes a mutex's row: HighestSeen still refuses the old token when the
// name has a mark (a HighestSeen check of it committed before the
// release: the release carries the row's high-water to the mark, schema
// version 14), and for a shared lock (its row keeps the high-water). A
// mutex-only name that no HighestSeen check has marked yet forgets its
// newer grant with its row, and with it every grant: the old token is
// above the newest grant the schema remembers (none) and is refused as not
// the name's (ErrInvalidArgument, schema version 19; before, it passed:
// the limit docs/POSTGRES.md stated).
func TestHighestSeenAfterNewerReleased(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := pgfence.New(schema, pgfence.HighestSeen)
	for _, tc := range []struct {
		what      string
		kind      grantKind
		marked    bool // the old holder wrote before it was deposed
		expire    bool // deposed by its lease's end instead of a force-release
		forgotten bool // refused as not the name's, the name forgotten
	}{
		{"mutex, marked, force-released", asMutex, true, false, false},
		{"mutex, marked, expired", asMutex, true, true, false},
		{"writer, unmarked, force-released", asWriter, false, false, false},
		{"permit, unmarked, force-released", asPermit, false, false, false},
		{"mutex, unmarked, force-released (forgotten)", asMutex, false, false, true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			n := name(t)
			opts := []distlock.Option{distlock.WithTTL(10 * time.Second)}
			if tc.expire {
				opts = []distlock.Option{distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false)}
			}
			old, err := tc.kind.acquire(ctx, c, n, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.marked {
				if err := check(t, pool, g, old); err != nil {
					t.Fatalf("the holder's write: %v", err)
				}
			}
			if tc.expire {
				sharedExpired(t, pool, old)
			} else if _, err := c.ForceRelease(ctx, n); err != nil {
				t.Fatal(err)
			}
			newer, err := tc.kind.acquire(ctx, c, n, distlock.WithTTL(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := newer.Release(ctx); err != nil {
				t.Fatal(err)
			}
			err = check(t, pool, g, old)
			if !tc.forgotten {
				wantStale(t, "the deposed holder after a newer grant was released", err)
			} else if !errors.Is(err, pgfence.ErrInvalidArgument) || errors.Is(err, pgfence.ErrStale) {
				t.Fatalf("the deposed holder, the name forgotten: %v; want ErrInvalidArgument (above the newest grant remembered: none)", err)
			}
		})
	}
}

// TestHighestSeenAfterSweep: a shared lock's row deleted by Sweep (unused
// for a week) leaves its high-water with the name's mark: an older token
// is still refused.
func TestHighestSeenAfterSweep(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := postgres.New(pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	g := pgfence.New(schema, pgfence.HighestSeen)
	n := name(t)
	old, err := c.RWMutex(n).Lock(ctx, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, pool, g, old); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForceRelease(ctx, n); err != nil {
		t.Fatal(err)
	}
	newer, err := c.RWMutex(n).Lock(ctx, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := newer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A week unused, as far as Sweep can tell.
	if _, err := pool.Exec(ctx, `UPDATE `+schema+`.shared SET used_at = clock_timestamp() - interval '8 days' WHERE name = $1`, n); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := eng.Sweep(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		var left bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+schema+`.shared WHERE name = $1)
			OR EXISTS (SELECT 1 FROM `+schema+`.locks WHERE name = $1)`, n).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if !left {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the name's rows were not swept: %v", ctx.Err())
		}
	}
	wantStale(t, "the deposed writer after the name's rows were swept", check(t, pool, g, old))
}

// sharedExpired waits until l's lease has run out on the database, of any
// kind: no live row of locks or shared_holders of its owner (the local
// loss signal comes earlier, by design).
func sharedExpired(t *testing.T, pool *pgxpool.Pool, l *distlock.Lease) {
	t.Helper()
	<-l.Done()
	end := time.Now().Add(10 * time.Second)
	for {
		var live bool
		err := pool.QueryRow(context.Background(), `SELECT
			EXISTS (SELECT 1 FROM `+schema+`.locks WHERE name = $1 AND owner = $2 AND expires_at > clock_timestamp())
			OR EXISTS (SELECT 1 FROM `+schema+`.shared_holders WHERE name = $1 AND owner = $2 AND expires_at > clock_timestamp())`,
			l.Name(), l.Owner()).Scan(&live)
		if err == nil && !live {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%q still live on the database 10s after its lease ended locally (%v)", l.Name(), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHighestSeenTwiceWhileReleased: a transaction checks a name twice
// while a newer grant of it is made and released between the checks (the
// release waits for the open transaction's mark, to carry its high-water
// there): the second check refuses the older token, at once, and the
// release then completes. (Had HighestSeen share-locked the row of locks
// too, as before version 14, the second check would wait for the release
// and the release for the mark: a deadlock, one side aborted.)
func TestHighestSeenTwiceWhileReleased(t *testing.T) {
	pool, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := pgfence.New(schema, pgfence.HighestSeen)
	n := name(t)
	old, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, pool, g, old); err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := g.Check(ctx, tx, n, old.Token(), old.Owner()); err != nil {
		t.Fatalf("the first check, nobody newer granted: %v", err)
	}
	released := make(chan error, 1)
	go func() {
		newer, err := c.Acquire(ctx, n, distlock.WithTTL(10*time.Second))
		if err != nil {
			released <- err
			return
		}
		released <- newer.Release(ctx) // waits for the open transaction's mark
	}()
	waitBlocked(t, pool)
	wantStale(t, "the second check, a newer grant made meanwhile", g.Check(ctx, tx, n, old.Token(), old.Owner()))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("the newer grant's release: %v", err)
	}
	wantStale(t, "the old token after the newer grant's release", check(t, pool, g, old))
}
