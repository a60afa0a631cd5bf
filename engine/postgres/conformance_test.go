package postgres_test

import (
	"context"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestConformance runs the conformance suite with every engine on a pool
// of its own (as a separate process would have) on one database.
func TestConformance(t *testing.T) {
	const schema = "conformance"
	migrated(t, schema)
	admin := newPool(t)
	if _, err := admin.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS registers (name text PRIMARY KEY, v bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newEngine(t, newPool(t), schema) },
		// Behind the library's back, as an operator's UPDATE: no wake-up.
		Delete: func(t *testing.T, name string) {
			_, err := admin.Exec(context.Background(),
				`UPDATE conformance.locks SET owner = NULL, holds = 0, expires_at = NULL WHERE name = $1`, name)
			if err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register { return &register{name: name, pool: admin} },
	}
	enginetest.Run(t, h)
	enginetest.Check(t, checkerHarness(h, schema))
	enginetest.CheckMutants(t, h)
}
