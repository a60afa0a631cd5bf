package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestSharedRaiseBounds: RaiseFence of a shared holder within engine.CheckRaise
// (raise_shared_fence and _check_raise).
func TestSharedRaiseBounds(t *testing.T) {
	const schema = "raisebounds"
	migrated(t, schema)
	enginetest.SharedRaiseBounds(t, newEngine(t, newPool(t), schema))
}

// TestExhaustedHighWater: a high-water at bigint's maximum (written by
// hand) makes the next grant fail with engine.ErrFenceExhausted, never a
// wrapped token, and changes nothing.
func TestExhaustedHighWater(t *testing.T) {
	const schema = "exhausted"
	migrated(t, schema)
	ctx := context.Background()
	admin := newPool(t)
	if _, err := admin.Exec(ctx, `INSERT INTO exhausted.locks (name, high_water) VALUES ('x', 9223372036854775807)`); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, newPool(t), schema)
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "x", Owner: "o", Attempt: "a", TTL: time.Minute})
	if !errors.Is(err, engine.ErrFenceExhausted) || g.Acquired {
		t.Fatalf("grant: %+v, %v; want engine.ErrFenceExhausted", g, err)
	}
	if info, err := e.Inspect(ctx, "x"); err != nil || info.Held {
		t.Fatalf("the refused grant left %+v, %v", info, err)
	}
}
