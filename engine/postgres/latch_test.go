package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/postgres"
)

// TestLatch runs the countdown latch cases with every engine on a pool of
// its own on one database.
func TestLatch(t *testing.T) {
	const schema = "latch"
	migrated(t, schema)
	enginetest.RunLatch(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newEngine(t, newPool(t), schema) },
	})
}

// TestLatchUpgrade: on a version 5 schema (testdata) every latch call is
// a *SchemaError matching ErrNotMigrated that says to migrate, and leaves
// nothing behind; Migrate brings the schema to the current version, keeping a lock
// held across it, and the latch then counts and wakes its waiter.
func TestLatchUpgrade(t *testing.T) {
	const schema = "upgrade_v5"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v5.sql")
	e := newEngine(t, pool, schema)
	c := distlock.New(e)
	defer c.Close()
	l := c.CountDownLatch("l")
	_, err1 := l.TrySetCount(ctx, 2)
	_, err2 := l.Count(ctx)
	for _, err := range []error{err1, err2, l.CountDown(ctx), l.Wait(ctx)} {
		var se *postgres.SchemaError
		if !errors.Is(err, postgres.ErrNotMigrated) || !errors.As(err, &se) || !strings.Contains(err.Error(), "distlock postgres init") {
			t.Fatalf("a latch on version 5: %v, want a *SchemaError saying to migrate", err)
		}
	}
	held, err := c.TryAcquire(ctx, "l", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	upgrade(t, ctx, pool, schema)
	if info, err := e.Inspect(ctx, "l"); err != nil || info.Owner != held.Owner() || info.Token != held.Token() {
		t.Fatalf("held across the upgrade: %+v, %v", info, err)
	}
	if n, err := l.Count(ctx); n != 0 || err != nil {
		t.Fatalf("Count after the upgrade: %d %v, want 0 (nothing was set before)", n, err)
	}
	if set, err := l.TrySetCount(ctx, 1); !set || err != nil {
		t.Fatal(set, err)
	}
	waited := make(chan error, 1)
	other := distlock.New(newEngine(t, newPool(t), schema))
	defer other.Close()
	go func() { waited <- other.CountDownLatch("l").Wait(ctx) }()
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// TestLatchWithoutListen: on an engine that does not LISTEN (a pool behind
// a transaction-mode PgBouncer) Subscribe fails, and Wait reads the count
// now and then instead: it still returns once the count is zero, not
// before. (Before, Wait failed with ErrNoListen: seen.)
func TestLatchWithoutListen(t *testing.T) {
	const schema = "latch_nolisten"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := distlock.New(newEngine(t, newPool(t), schema, postgres.WithoutListen()))
	defer c.Close()
	l := c.CountDownLatch("l")
	if set, err := l.TrySetCount(ctx, 1); !set || err != nil {
		t.Fatal(set, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- l.Wait(ctx) }()
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if err := l.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait while counting: %v, want its deadline", err)
	}
	select {
	case err := <-waited:
		t.Fatalf("Wait returned with the count at 1: %v", err)
	default:
	}
	other := distlock.New(newEngine(t, newPool(t), schema))
	defer other.Close()
	if err := other.CountDownLatch("l").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}
