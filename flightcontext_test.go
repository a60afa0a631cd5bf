package distlock

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

type flightTestKey struct{}

// TestFlightContextKeepsCallerDeadline: a request in flight runs on the
// caller's values without its cancellation, until the caller's deadline
// plus the release timeout, and still answers the caller's own deadline
// (through contexts derived from it, as an engine derives them), so that
// the remote engine shares the caller's time among its servers, not the
// flight's. A caller without a deadline gives none.
func TestFlightContextKeepsCallerDeadline(t *testing.T) {
	const rt = 3 * time.Second
	c := New(memory.New(), WithReleaseTimeout(rt))
	defer c.Close()

	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), flightTestKey{}, "v"), time.Minute)
	defer cancel()
	given, _ := parent.Deadline()
	fctx, fcancel := c.flightContext(parent)
	defer fcancel()
	derived, dcancel := context.WithCancel(fctx)
	defer dcancel()

	for what, ctx := range map[string]context.Context{"flight": fctx, "derived": derived} {
		if d, ok := ctx.Deadline(); !ok || !d.Equal(given.Add(rt)) {
			t.Errorf("%s context's deadline %v, %v; want the caller's plus the release timeout, %v", what, d, ok, given.Add(rt))
		}
		if d, ok := engine.CallerDeadline(ctx); !ok || !d.Equal(given) {
			t.Errorf("%s context's caller deadline %v, %v; want the caller's own, %v", what, d, ok, given)
		}
		if v := ctx.Value(flightTestKey{}); v != "v" {
			t.Errorf("%s context's value %v; want the caller's", what, v)
		}
	}
	cancel()
	if err := derived.Err(); err != nil {
		t.Errorf("the caller's cancel ended the request in flight: %v", err)
	}
	fcancel()
	if derived.Err() == nil {
		t.Error("the flight's cancel did not reach a context derived from it")
	}

	nctx, ncancel := c.flightContext(context.Background())
	defer ncancel()
	if d, ok := nctx.Deadline(); ok {
		t.Errorf("no deadline given, the flight has one: %v", d)
	}
	if d, ok := engine.CallerDeadline(nctx); ok {
		t.Errorf("no deadline given, the flight answers a caller deadline: %v", d)
	}
}
