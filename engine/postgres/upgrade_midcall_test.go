package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestUpgradeDuringCall: an engine that found a version 6 schema (and so
// calls version 6's acquire) goes on granting when a Migrate brings the
// schema up to date and a call then meets "function does not exist", as
// a version 6 body running across the upgrade does when it reaches a
// function the upgrade dropped (nothing ran: the statement rolled back).
// The engine then calls the current signature; before, it answered "not
// migrated", a permanent error that ended a waiter's wait (seen in CI in
// TestUpgradeV6Channels).
func TestUpgradeDuringCall(t *testing.T) {
	const schema = "upgrade_midcall"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v6.sql")
	c := distlock.New(newEngine(t, newPool(t), schema))
	defer c.Close()
	l, err := c.TryAcquire(ctx, "first") // the engine finds version 6
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	upgrade(t, ctx, pool, schema)
	// Version 6's signature, as a body caught by the upgrade: it calls a
	// function that is gone.
	if _, err := pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+schema+`.acquire(
  p_name text, p_owner text, p_ttl_us bigint, p_metadata text, p_attempt text,
  p_waiting boolean, p_waiter text, p_waiter_ttl_us bigint, p_fair boolean,
  p_behind boolean, p_no_reserve boolean, p_announce boolean,
  OUT o_acquired boolean, OUT o_token bigint, OUT o_holds integer, OUT o_holder text,
  OUT o_holder_ttl_us bigint, OUT o_queued boolean, OUT o_head boolean, OUT o_reserved boolean)
LANGUAGE plpgsql AS $$ BEGIN PERFORM `+schema+`._dropped_by_the_upgrade(p_name); END $$`); err != nil {
		t.Fatal(err)
	}
	l, err = c.TryAcquire(ctx, "x")
	if err != nil {
		t.Fatalf("an acquire after the schema was migrated under the engine: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
