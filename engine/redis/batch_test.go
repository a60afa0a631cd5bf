package redis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/lagprobe"
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
// The ticks are counted from the renewals seen (one per lease per tick),
// not from the time that passed; the grants' spread, as measured, says how
// many groups a tick may take (leases due within half an interval of one
// another share a round trip). A lease lost meanwhile ends the test:
// skipped on a machine measured starved, failed otherwise (lostLease).
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
	probe := enginetest.StartProbe(t)
	// A ttl long enough that a renewal answered late on a busy machine
	// still lands before the deadline; a lease lost anyway is judged below.
	const ttl = 1500 * time.Millisecond
	const n = 100
	leases := make([]*distlock.Lease, n)
	first := time.Now()
	for i := range n {
		l, err := c.Acquire(ctx, fmt.Sprintf("batch-%d", i), distlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
		time.Sleep(2 * time.Millisecond) // spread the grants over about half the interval
	}
	spread := time.Since(first)
	if spread >= ttl/3 {
		t.Skipf("machine too slow: %d grants took %v, a renewal interval (%v) or more: nothing to batch", n, spread, ttl/3)
	}
	groups := int64(spread/(ttl/6)) + 1
	rt.pipelines.Store(0)
	rt.piped.Store(0)
	const ticks = 6
	deadline := time.Now().Add(30 * time.Second)
	for rt.piped.Load() < n*ticks {
		if time.Now().After(deadline) {
			t.Fatalf("only %d renewals for %d leases in 30s", rt.piped.Load(), n)
		}
		lostLease(t, leases, probe)
		time.Sleep(time.Millisecond)
	}
	pipes, piped := rt.pipelines.Load(), rt.piped.Load()
	seen := piped / n // ticks
	t.Logf("%d renewals in %d round trips (%d ticks; grants spread over %v: up to %d groups a tick)", piped, pipes, seen, spread, groups)
	if pipes > 2*groups*(seen+1) {
		t.Fatalf("%d round trips for %d ticks of %d leases: renewals are not batched per tick", pipes, seen, n)
	}
}

// lostLease ends the test when one of leases is lost: its renewals stop,
// so the count of renewals would never be reached. Lost on a machine that
// was measured starved (lagprobe.Starved: the watchdog or the server may
// have been descheduled past the lease's deadline), it skips; lost on a
// machine that kept up, the watchdog failed to renew it, and it fails.
func lostLease(t *testing.T, leases []*distlock.Lease, probe *enginetest.Probe) {
	t.Helper()
	for i, l := range leases {
		err := l.Err()
		if err == nil {
			continue
		}
		if d := probe.Delay(); d >= lagprobe.Starved {
			t.Skipf("machine too slow: measured scheduling delay %v; lease %d lost: %v", d, i, err)
		}
		t.Fatalf("lease %d lost while the machine kept up (scheduling delay %v): %v", i, probe.Delay(), err)
	}
}
