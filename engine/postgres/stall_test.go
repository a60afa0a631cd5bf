package postgres_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// Stalled backends: a trigger makes the statements of chosen sessions wait
// at one point, as a backend stalled by a slow disk, a lock wait or a
// pause would, until the test lets them go on. Other sessions are not
// affected.

// stallKey is the advisory lock the test holds while stalled sessions wait
// for it.
const stallKey = 4242

// stallParams are the connection parameters of a session that stalls,
// application app (waitLocked finds it).
func stallParams(app string) []string {
	return []string{"application_name=" + app, "distlock_test.stall=on"}
}

// installStall adds to schema the trigger at (say "BEFORE INSERT ON
// locks", a row-level trigger's timing, event and table) that, in a
// session whose distlock_test.stall setting is on, waits for the advisory
// lock stallKey (shared, until the transaction ends).
func installStall(t *testing.T, ctx context.Context, db *pgxpool.Pool, schema, at string) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	table := at[strings.LastIndex(at, " ")+1:]
	for _, q := range []string{
		`CREATE OR REPLACE FUNCTION ` + s + `.stall_for_test() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('distlock_test.stall', true) = 'on' THEN
    PERFORM pg_advisory_xact_lock_shared(` + strconv.Itoa(stallKey) + `);
  END IF;
  RETURN NEW;
END $$`,
		`DROP TRIGGER IF EXISTS stall_for_test ON ` + s + `.` + table,
		`CREATE TRIGGER stall_for_test ` + strings.Replace(at, " ON "+table, " ON "+s+"."+table, 1) +
			` FOR EACH ROW EXECUTE FUNCTION ` + s + `.stall_for_test()`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// holdStall takes the advisory lock stallKey: stalled sessions wait from
// now until the returned function (also run when the test ends) lets
// them go on.
func holdStall(t *testing.T, ctx context.Context) (letGo func()) {
	t.Helper()
	hold, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock($1)`, stallKey); err != nil {
		t.Fatal(err)
	}
	done := false
	letGo = func() {
		if !done {
			done = true
			_ = hold.Close(context.WithoutCancel(ctx)) // the session's advisory lock goes with it
		}
	}
	t.Cleanup(letGo)
	return letGo
}

// stalledGrant makes a grant of name on schema whose backend stalls in its
// insert into locks (installStall) while other takes name on another
// engine and lets it go; it returns the stalled grant (acquired: other
// let the name go before it went on) and other's token.
func stalledGrant(t *testing.T, ctx context.Context, schema, name string, other func(e *postgres.Engine) uint64) (engine.Grant, uint64) {
	t.Helper()
	app := "stalled-" + name
	letGo := holdStall(t, ctx)
	stalled := newEngine(t, newPool(t, stallParams(app)...), schema)
	type result struct {
		g   engine.Grant
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := stalled.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "a", Attempt: "a", TTL: time.Minute})
		done <- result{g, err}
	}()
	waitLocked(t, ctx, app, 1) // in the trigger: its row is not there yet
	b := other(newEngine(t, newPool(t), schema))
	letGo()
	r := <-done
	if r.err != nil || !r.g.Acquired {
		t.Fatalf("the stalled grant: %+v, %v", r.g, r.err)
	}
	return r.g, b
}
