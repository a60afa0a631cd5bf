package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestCheckerCatchesFunctionMutant: the randomized checker catches the
// engine with one of its plpgsql functions broken inside PostgreSQL:
// _mutex_check, in a schema of the test's own, redefined without the
// refusal of a mutex while live holders of a shared lock of the name
// exist (issue 23's cross-kind grant, put back where it was). The
// function's text is the migrated one (pg_get_functiondef) with that one
// statement taken out; schema.sql is untouched.
func TestCheckerCatchesFunctionMutant(t *testing.T) {
	const schema = "checker_mutant"
	migrated(t, schema)
	admin := newPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var def string
	if err := admin.QueryRow(ctx, `SELECT pg_get_functiondef('checker_mutant._mutex_check(text, timestamptz)'::regprocedure)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	const check = "RAISE EXCEPTION 'DISTLOCK kind %', k USING ERRCODE = 'DL001';"
	mut := strings.Replace(def, check, "NULL; -- mutant: no kind check", 1)
	if mut == def {
		t.Fatalf("_mutex_check no longer has the statement this mutant takes out:\n%s", def)
	}
	if _, err := admin.Exec(ctx, mut); err != nil {
		t.Fatal(err)
	}
	h := enginetest.Harness{New: func(t *testing.T) engine.Engine { return newEngine(t, newPool(t), schema) }}
	enginetest.CheckCatches(t, h, 20*time.Second, []uint64{674156652518316756}, "exclusion:", "kinds:", "differential:")
}
