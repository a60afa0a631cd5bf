package memory

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestTakenMarksSwept: the marks a force-release leaves, for a mutex's
// holder and a shared lock's, answer every renewal of that owner taken
// over (a resent one too) until the freed lease would have ended; then the
// renewal is answered missing and the next sweep drops the marks: a freed
// holder that never renews leaves nothing behind.
func TestTakenMarksSwept(t *testing.T) {
	ctx := context.Background()
	e := New()
	defer e.Close()
	at := time.Now()
	e.now = func() time.Time { return at }
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "m", Owner: "mo", Attempt: "1", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "s", Owner: "so", Attempt: "2", TTL: time.Second, Kind: engine.Semaphore, Limit: 2, Weight: 1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m", "s"} {
		if held, err := e.ForceRelease(ctx, name); err != nil || !held {
			t.Fatalf("ForceRelease(%s) = %v, %v", name, held, err)
		}
	}
	renew := []engine.ExtendRequest{{Name: "m", Owner: "mo", TTL: time.Second}, {Name: "s", Owner: "so", TTL: time.Second, Kind: engine.Semaphore}}
	for range 2 {
		res, err := e.Extend(ctx, renew)
		if err != nil || res[0].Status != engine.HeldByOther || res[1].Status != engine.HeldByOther {
			t.Fatalf("the freed holders' renewals: %+v, %v; want held by other (taken over)", res, err)
		}
	}
	if n := e.takenCount(); n != 2 {
		t.Fatalf("%d marks, want 2", n)
	}
	at = at.Add(time.Second + sweepEvery)
	res, err := e.Extend(ctx, renew)
	if err != nil || res[0].Status != engine.Missing || res[1].Status != engine.Missing {
		t.Fatalf("renewals after the freed leases' end: %+v, %v; want missing", res, err)
	}
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "other", Owner: "x", Attempt: "3", TTL: time.Second}); err != nil {
		t.Fatal(err) // (an acquire sweeps)
	}
	if n := e.takenCount(); n != 0 {
		t.Fatalf("%d marks left after their end and a sweep, want 0", n)
	}
}
