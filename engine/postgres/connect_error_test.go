package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestConnectRefusedIsNotUnmigrated: a connection the server refuses at
// start-up (a misspelt parameter: SQLSTATE 42704, "unrecognized
// configuration parameter", the code of an undefined object) is a backend
// error carrying the server's message, not ErrNotMigrated, on a schema
// that is migrated; a query on a live connection to a schema never made
// is still ErrNotMigrated.
func TestConnectRefusedIsNotUnmigrated(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const schema = "connrefused"
	migrated(t, schema)

	eng, err := engine.Open(ctx, srv.URL("schema="+schema, "aplication_name=x"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer eng.Close()
	_, err = eng.Inspect(ctx, "connrefused")
	var pe *pgconn.PgError
	switch {
	case err == nil:
		t.Fatal("Inspect over a connection the server refuses: no error")
	case errors.Is(err, postgres.ErrNotMigrated):
		t.Fatalf("Inspect over a connection the server refuses: %v, reported as not migrated", err)
	case !errors.As(err, &pe) || pe.Code != "42704" || !strings.Contains(err.Error(), "aplication_name"):
		t.Fatalf("Inspect over a connection the server refuses: %v, want the server's 42704 naming aplication_name", err)
	}

	live, err := engine.Open(ctx, srv.URL("schema=connrefused_never_made"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer live.Close()
	if _, err := live.Inspect(ctx, "connrefused"); !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("Inspect on a schema never made: %v, want ErrNotMigrated", err)
	}
}
