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

// mutexMeanwhile takes name as a mutex and releases it.
func mutexMeanwhile(t *testing.T, ctx context.Context, name string) func(e *postgres.Engine) uint64 {
	return func(e *postgres.Engine) uint64 {
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "b", Attempt: "b", TTL: time.Minute})
		if err != nil || !g.Acquired {
			t.Fatalf("the grant made meanwhile: %+v, %v", g, err)
		}
		if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "b"}); err != nil {
			t.Fatal(err)
		}
		return g.Token
	}
}

// TestStalledGrantToken: a grant whose backend stalls before its row is
// written (a trigger holds its insert) while another client takes the
// name and releases it gets a token above that grant's, whichever kind
// the other took; pgfence's HighestSeen then refuses the earlier holder's
// write and accepts the current holder's. (On the version 2 schema the
// stalled grant kept a token drawn before the stall, below the other's:
// TestTokenUpgrade shows it.)
func TestStalledGrantToken(t *testing.T) {
	const schema = "stall"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	installStall(t, ctx, pool, schema, "BEFORE INSERT ON locks")
	for _, tc := range []struct {
		what  string
		other func(name string) func(e *postgres.Engine) uint64
	}{
		{"a mutex", func(name string) func(e *postgres.Engine) uint64 { return mutexMeanwhile(t, ctx, name) }},
		{"a permit", func(name string) func(e *postgres.Engine) uint64 {
			return func(e *postgres.Engine) uint64 {
				g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "b", Attempt: "b", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1})
				if err != nil || !g.Acquired {
					t.Fatalf("the permit granted meanwhile: %+v, %v", g, err)
				}
				if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "b", Kind: engine.Semaphore}); err != nil {
					t.Fatal(err)
				}
				return g.Token
			}
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			name := uniqueName(t)
			g, b := stalledGrant(t, ctx, schema, name, tc.other(name))
			if g.Token <= b {
				t.Errorf("the stalled grant's token %d is not above %d, the token of %s granted and released before it", g.Token, b, tc.what)
			}
			// The resource: the earlier holder's write is stale, the
			// current holder's goes ahead.
			guard := pgfence.New(schema, pgfence.HighestSeen)
			write := func(token uint64, holder string) error {
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return guard.Check(ctx, tx, name, token, holder) })
			}
			if err := write(b, "b"); !errors.Is(err, pgfence.ErrStale) {
				t.Errorf("the earlier holder's write: %v, want ErrStale", err)
			}
			if err := write(g.Token, "a"); err != nil {
				t.Errorf("the current holder's write: %v", err)
			}
		})
	}
}

// TestTokenUpgrade: on a version 2 schema (testdata), the stalled grant of
// TestStalledGrantToken keeps the token it drew before the stall, below
// the grant made meanwhile (the flaw the test catches), and a mutex is
// granted beside a semaphore's holder; Migrate brings it to the current
// version, keeping the leases held across it, and then the stalled grant's
// token is above the other's and the mutex is refused.
func TestTokenUpgrade(t *testing.T) {
	const schema = "upgrade_v2"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v2.sql")
	installStall(t, ctx, pool, schema, "BEFORE INSERT ON locks")
	e := newEngine(t, pool, schema)
	permit := engine.AcquireRequest{Name: "s", Owner: "p", Attempt: "p", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1}
	if g, err := e.Acquire(ctx, permit); err != nil || !g.Acquired {
		t.Fatalf("a permit: %+v, %v", g, err)
	}
	mutex := engine.AcquireRequest{Name: "s", Owner: "m", Attempt: "m", TTL: time.Minute}
	if g, err := e.Acquire(ctx, mutex); err != nil || !g.Acquired {
		t.Fatalf("version 2 granted a mutex beside a permit: %+v, %v", g, err)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "s", Owner: "m"}); err != nil {
		t.Fatal(err)
	}
	if g, b := stalledGrant(t, ctx, schema, "old", mutexMeanwhile(t, ctx, "old")); g.Token >= b {
		t.Fatalf("on version 2 the stalled grant's token %d is above %d: the scenario no longer shows the flaw", g.Token, b)
	}
	for range 2 {
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
	}
	var version int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM upgrade_v2.version`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("version %d (%v), want %d", version, err, postgres.SchemaVersion)
	}
	if info, err := e.Inspect(ctx, "old"); err != nil || info.Owner != "a" {
		t.Fatalf("the lease held across the upgrade: %+v, %v", info, err)
	}
	var ae *engine.ArgumentError
	if _, err := e.Acquire(ctx, mutex); !errors.As(err, &ae) || err.Error() != engine.KindError("s", engine.Semaphore, 0).Error() {
		t.Fatalf("a mutex beside a permit granted before the upgrade: %v", err)
	}
	if g, b := stalledGrant(t, ctx, schema, "new", mutexMeanwhile(t, ctx, "new")); g.Token <= b {
		t.Fatalf("after the upgrade the stalled grant's token %d is not above %d", g.Token, b)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
