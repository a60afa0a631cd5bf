package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/postgres"
)

// TestLimitUpgrade: a schema before version 4 (testdata: version 2)
// refuses a semaphore request that declares another limit than the stored
// one; the engine reports that as ErrNotMigrated (a *SchemaError, which
// ends a wait at once), not as a backend failure to retry. Once Migrate
// ran, the request is served under the stored limit, and the permit held
// across the upgrade is kept.
func TestLimitUpgrade(t *testing.T) {
	const schema = "upgrade_limit"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v2.sql")
	c := distlock.New(newEngine(t, pool, schema))
	defer c.Close()
	held, err := c.Semaphore("s", 3).Acquire(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Semaphore("s", 5).Acquire(ctx); !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("another limit on a version 2 schema: %v, want ErrNotMigrated", err)
	}
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	l, err := c.Semaphore("s", 5).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("another limit after Migrate: %v, want a grant under the stored limit", err)
	}
	info, err := c.Semaphore("s", 5).Inspect(ctx)
	if err != nil || info.Limit != 3 || len(info.Holders) != 2 || held.Err() != nil {
		t.Fatalf("after the upgrade: %+v, %v, %v", info, err, held.Err())
	}
	_ = l.Release(ctx)
	_ = held.Release(ctx)
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
