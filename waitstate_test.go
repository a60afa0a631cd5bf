package distlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// TestWaitErrorAgesHolderTTL: a wait that gives up reports, in its
// WaitError's Last, the holder's time left as of the wait's end, not as of
// the attempt that got it (a waiter asleep in the queue asks once): at most
// what the engine shows right after, plus the time since the wait's
// context ended.
func TestWaitErrorAgesHolderTTL(t *testing.T) {
	eng := memory.New()
	t.Cleanup(func() { _ = eng.Close() })
	holder, waiter := distlock.New(eng), distlock.New(eng)
	t.Cleanup(func() { _ = holder.Close(); _ = waiter.Close() })
	ctx := context.Background()
	l, err := holder.Acquire(ctx, "aged", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// The WaitError is made once the context ended, so no earlier than
	// its deadline.
	ended, _ := wctx.Deadline()
	_, err = waiter.Acquire(wctx, "aged")
	var we *distlock.WaitError
	var le *distlock.LockedError
	if !errors.As(err, &we) || !errors.As(we.Last, &le) {
		t.Fatalf("Acquire: %v, want a *WaitError whose last attempt was locked", err)
	}
	info, err := holder.Inspect(ctx, "aged")
	if err != nil || !info.Held {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if most := info.TTL + time.Since(ended); le.TTL > most {
		t.Fatalf("the WaitError after %v reports the holder's lease ending in %v; the engine showed %v right after: want at most %v",
			we.Waited, le.TTL, info.TTL, most)
	}
}
