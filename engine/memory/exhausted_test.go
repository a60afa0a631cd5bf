package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestTokensNeverWrap: on a clock near 2^53 µs, the embedded engine mints
// up to engine.MaxToken and then refuses to grant (engine.ErrFenceExhausted,
// nothing changed) instead of minting a token above 53 bits or wrapping; a
// raise above MaxToken is refused. Before, the counter went on past 2^53
// and wrapped to 0 after a raise to 2^64-1.
func TestTokensNeverWrap(t *testing.T) {
	ctx := context.Background()
	e := New()
	defer e.Close()
	at := time.UnixMicro(engine.MaxToken - 10)
	e.now = func() time.Time { return at }
	req := engine.AcquireRequest{Name: "n", Owner: "a", Attempt: "a1", TTL: time.Minute}
	g, err := e.Acquire(ctx, req)
	if err != nil || !g.Acquired || g.Token != engine.MaxToken-10 {
		t.Fatalf("grant: %+v, %v; want the clock's token %d", g, err, uint64(engine.MaxToken-10))
	}
	var ae *engine.ArgumentError
	if ok, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: "n", Owner: "a", Token: engine.MaxToken + 1}); ok || !errors.As(err, &ae) {
		t.Fatalf("raise above 2^53-1: %v, %v; want an *engine.ArgumentError", ok, err)
	}
	if ok, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: "n", Owner: "a", Token: engine.MaxToken}); !ok || err != nil {
		t.Fatalf("raise to 2^53-1: %v, %v", ok, err)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "n", Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []engine.AcquireRequest{
		{Name: "n", Owner: "b", Attempt: "b1", TTL: time.Minute},
		{Name: "fresh", Owner: "b", Attempt: "b2", TTL: time.Minute}, // the clock alone is past 2^53-1
	} {
		if r.Name == "fresh" {
			at = time.UnixMicro(engine.MaxToken + 1)
		}
		g, err := e.Acquire(ctx, r)
		if !errors.Is(err, engine.ErrFenceExhausted) || g.Acquired {
			t.Fatalf("%s: grant %+v, %v; want engine.ErrFenceExhausted", r.Name, g, err)
		}
		if info, _ := e.Inspect(ctx, r.Name); info.Held {
			t.Fatalf("%s: the refused grant holds the lock: %+v", r.Name, info)
		}
		sr := r
		sr.Kind, sr.Limit, sr.Weight = engine.Semaphore, 2, 1
		if g, err := e.Acquire(ctx, sr); !errors.Is(err, engine.ErrFenceExhausted) || g.Acquired {
			t.Fatalf("%s: shared grant %+v, %v; want engine.ErrFenceExhausted", r.Name, g, err)
		}
	}
}
