package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestResentCommandsApplyOnce: go-redis (default options) resends a command
// whose reply was lost to a connection reset. A resent acquire must not
// count a second hold, and a resent release must not drop a second hold
// (found by the safety lab: the lock was freed while its owner still held
// it once, and another client got it).
func TestResentCommandsApplyOnce(t *testing.T) {
	srv := redistest.Start(t)
	drop := redistest.NewReplyDropper(t, srv.Addr())
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
	// Load the scripts first, so that the reply dropped below is the
	// script's own and not a NOSCRIPT answer (which applies nothing).
	if l, err := c.Acquire(ctx, "warm-up"); err != nil {
		t.Fatal(err)
	} else if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	outer, err := c.Acquire(ctx, "report", opts...)
	if err != nil {
		t.Fatal(err)
	}
	drop.Arm()
	inner, err := c.Acquire(ctx, "report", opts...) // re-entry, resent once
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Inspect(ctx, "report"); drop.Dropped() != 1 || info.Count != 2 {
		t.Fatalf("after a resent re-entry: %d holds (dropped %d replies), want 2", info.Count, drop.Dropped())
	}
	_ = inner // released below through the engine, as Release does, without a deadline
	drop.Arm()
	if _, err := eng.Release(ctx, engine.ReleaseRequest{Name: "report", Owner: "job-42"}); err != nil { // applied, reply lost, resent
		t.Fatal(err)
	}
	if drop.Dropped() != 2 {
		t.Fatalf("dropped %d replies, want 2", drop.Dropped())
	}
	info, err := c.Inspect(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	other := distlock.New(eng)
	defer other.Close()
	_, err = other.TryAcquire(ctx, "report")
	if !info.Held || info.Count != 1 || !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("after one release of two holds: held=%v count=%d, another client: %v; want held once and ErrLocked", info.Held, info.Count, err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
