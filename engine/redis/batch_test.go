package redis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// roundTrips counts the commands and pipelines a go-redis client sends.
type roundTrips struct {
	single, pipelines, piped atomic.Int64
}

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		r.single.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		r.pipelines.Add(1)
		r.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestRenewalsBatched: 100 leases of one client, acquired at different
// moments, are renewed in about one round trip per tick, not one per lease.
func TestRenewalsBatched(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	var rt roundTrips
	rc.AddHook(&rt)
	eng, err := redisengine.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	const n = 100
	for i := range n {
		if _, err := c.Acquire(ctx, fmt.Sprintf("batch-%d", i), distlock.WithTTL(ttl)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // spread the grants over a third of the interval
	}
	rt.pipelines.Store(0)
	rt.piped.Store(0)
	const window = 2 * time.Second
	time.Sleep(window)
	ticks := int64(window / (ttl / 3))
	pipes, piped := rt.pipelines.Load(), rt.piped.Load()
	t.Logf("%d renewals in %d round trips over %v (%d ticks at ttl/3)", piped, pipes, window, ticks)
	if piped < n*ticks/2 {
		t.Fatalf("only %d renewals for %d leases over %d ticks", piped, n, ticks)
	}
	if pipes > 2*ticks+2 {
		t.Fatalf("%d round trips for %d ticks: renewals are not batched per tick", pipes, ticks)
	}
}
