package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestProclaimTokenUpgrade: on a version 15 schema (testdata) the engine
// calls set_metadata without the grant's token, and a deposed leader's
// Proclaim (its grant force-released, its owner granted the name again)
// overwrites the newer grant's value; Migrate brings it to version 16 with
// the newer grant held across it; the engine, once its v15Recheck has
// passed, names the token: the freed grant's Proclaim is answered
// HeldByOther and changes nothing, the newer grant's sets its value; and
// version 15's set_metadata still answers for processes of that version
// (the owner's hold, whatever its token).
func TestProclaimTokenUpgrade(t *testing.T) {
	const schema = "upgrade_v15"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v15.sql")
	e := newEngine(t, newPool(t), schema)
	name := uniqueName(t)
	metadata := func() string {
		t.Helper()
		info, err := e.Inspect(ctx, name)
		if err != nil || !info.Held {
			t.Fatalf("inspect: %+v, %v", info, err)
		}
		return info.Metadata
	}
	set := func(token uint64, value string) engine.ExtendStatus {
		t.Helper()
		st, err := e.SetMetadata(ctx, engine.MetadataRequest{Name: name, Owner: "o", Metadata: value, Token: token})
		if err != nil {
			t.Fatalf("set metadata %q (token %d): %v", value, token, err)
		}
		return st
	}

	old, newer := grantAgain(t, ctx, e, name, engine.Mutex, 0, 0)
	if st := set(old, "stale"); st != engine.Extended || metadata() != "stale" {
		t.Fatalf("version 15: the freed grant's proclaim: %v, metadata %q; want Extended, stale (unchecked: the flaw version 16 mends)", st, metadata())
	}
	if !e.V15() {
		t.Fatal("the engine on a version 15 schema does not call version 15's set_metadata")
	}

	upgrade(t, ctx, pool, schema) // the newer grant held across it

	e.EndV15() // as v15Recheck's passing
	if st := set(old, "stale again"); st != engine.HeldByOther || metadata() != "stale" {
		t.Fatalf("after the upgrade: the freed grant's proclaim: %v, metadata %q; want HeldByOther, unchanged", st, metadata())
	}
	if e.V15() {
		t.Fatal("the engine calls version 15's set_metadata after the upgrade")
	}
	if st := set(newer, "fresh"); st != engine.Extended || metadata() != "fresh" {
		t.Fatalf("after the upgrade: the newer grant's proclaim: %v, metadata %q; want Extended, fresh", st, metadata())
	}
	if st := set(0, "any"); st != engine.Extended || metadata() != "any" {
		t.Fatalf("after the upgrade: a proclaim naming no token: %v, metadata %q; want Extended, any", st, metadata())
	}
	// Version 15's set_metadata, as a process of that version calls it.
	var status int
	if err := pool.QueryRow(ctx, `SELECT `+schema+`.set_metadata($1, 'o', 'v15')`, name).Scan(&status); err != nil || status != 1 || metadata() != "v15" {
		t.Fatalf("version 15's set_metadata after the upgrade: %d, %v, metadata %q; want 1, v15", status, err, metadata())
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
