package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/postgres"
)

// TestNotMigratedEndsWaits: on a schema Migrate never made, the calls that
// wait (Acquire, Semaphore.Acquire, RWMutex.Lock and RLock, Campaign) with
// context.Background() fail at once with ErrNotMigrated, as TryAcquire
// does: a wait cannot migrate a schema. They neither retry until their
// context ends nor wait out the Client's backend failure budget (the
// default, 20s; BackendError.Failing says whether it ran). (Before issue
// 24 they retried forever.) The minute's guard keeps a wait that never ends
// from hanging the test; it asserts no speed.
func TestNotMigratedEndsWaits(t *testing.T) {
	pool := newPool(t)
	e := newEngine(t, pool, "never_migrated_waits")
	c := distlock.New(e)
	defer c.Close()
	ctx := context.Background()
	calls := map[string]func() error{
		"Acquire":           func() error { _, err := c.Acquire(ctx, "m"); return err },
		"Semaphore.Acquire": func() error { _, err := c.Semaphore("s", 2).Acquire(ctx); return err },
		"RWMutex.Lock":      func() error { _, err := c.RWMutex("rw").Lock(ctx); return err },
		"RWMutex.RLock":     func() error { _, err := c.RWMutex("rw").RLock(ctx); return err },
		"Campaign":          func() error { _, err := c.Campaign(ctx, "e", "v"); return err },
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() { done <- call() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s on a schema never migrated did not return", name)
		}
		var be *distlock.BackendError
		if !errors.Is(err, postgres.ErrNotMigrated) || !errors.As(err, &be) {
			t.Errorf("%s = %v, want a *BackendError matching ErrNotMigrated", name, err)
			continue
		}
		if be.Failing != 0 {
			t.Errorf("%s waited out the failure budget (%v) for an error no retry mends", name, be.Failing)
		}
	}
}
