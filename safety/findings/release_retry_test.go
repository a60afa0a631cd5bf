package findings

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestReleaseRetryDropsTwoHolds: one Release of a re-entrant lock must drop
// one hold. go-redis (default options) resends a command whose reply was
// lost to a connection reset; the acquire script is protected against that
// by its attempt id, the release script is not: it runs twice, the count
// goes 2 -> 1 -> 0, the lock is freed while its owner still holds it once,
// and another client is granted it.
//
// Found by the safety lab (scenario 11, connection reset mid-command) while
// checking which scripts are idempotent; reproduced here with a one-shot
// proxy that drops exactly one reply. It failed at commit 08ca900; the
// release script now carries a release id (engine/redis), and this test is
// its regression test from the outside.
func TestReleaseRetryDropsTwoHolds(t *testing.T) {
	srv := redistest.Start(t)
	drop := redistest.NewReplyDropper(t, srv.Addr())
	// The defaults a user gets, plus context deadlines (as the README asks).
	rdb := goredis.NewClient(&goredis.Options{Addr: drop.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true})
	defer rdb.Close()
	eng, err := redisengine.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	opts := []distlock.Option{distlock.WithOwner("job-42"), distlock.WithTTL(10 * time.Second), distlock.WithAutoRenew(false)}

	// Load the scripts (as any earlier use would): the lost reply must be
	// the release's own, not a NOSCRIPT answer.
	warm, err := c.Acquire(ctx, "warm-up", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}

	outer, err := c.Acquire(ctx, "report", opts...)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := c.Acquire(ctx, "report", opts...) // re-entry: 2 holds
	if err != nil {
		t.Fatal(err)
	}
	drop.Arm()
	err = inner.Release(ctx) // runs, its reply is lost, go-redis resends it
	if drop.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies, want 1", drop.Dropped())
	}
	t.Logf("inner release: %v", err)

	info, err := c.Inspect(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if outer.Err() != nil {
		t.Fatalf("outer lease: %v", outer.Err())
	}
	other := distlock.New(eng)
	defer other.Close()
	l, err := other.TryAcquire(ctx, "report", distlock.WithTTL(10*time.Second), distlock.WithAutoRenew(false))
	if err == nil {
		_ = l.Release(ctx)
	}
	if !info.Held || info.Count != 1 || !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("after one Release of two holds: held=%v count=%d; another client's TryAcquire: %v (want held, count 1, ErrLocked): "+
			"the outer hold of %q is still live on its side, so two clients hold the lock", info.Held, info.Count, err, outer.Owner())
	}
}
