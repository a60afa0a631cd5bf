package redis_test

// Benchmarks of auto-pipelining: the same uncontended TryAcquire+Release as
// the root package's benchmarks, with batching at several limits and off
// (WithMaxInflight(0)), against one redis-server, so that they compare
// within one run:
//
//	go test -run '^$' -bench 'Pipeline' -benchmem -count 4 ./engine/redis/

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// benchClient returns a distlock Client on an engine with opts over its own
// go-redis client (the options of the root package's benchmarks), and the
// engine's round-trip counter.
func benchClient(b *testing.B, srv *redistest.Server, opts ...redisengine.Option) (*distlock.Client, *roundTrips) {
	b.Helper()
	rc := srv.ClientWithPool(128)
	rt := &roundTrips{}
	rc.AddHook(rt)
	eng, err := redisengine.New(rc, opts...)
	if err != nil {
		b.Fatal(err)
	}
	c := distlock.New(eng)
	b.Cleanup(func() {
		_ = c.Close()
		_ = eng.Close()
		_ = rc.Close()
	})
	return c, rt
}

func benchOnce(ctx context.Context, c *distlock.Client, name string) error {
	l, err := c.TryAcquire(ctx, name)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

// BenchmarkPipelineParallel64: 64 goroutines, each on its own name, with
// batching off (inflight-0) and at limits 2, 4 and 8; round-trips/op counts
// single commands and pipelines per acquire+release.
func BenchmarkPipelineParallel64(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	for _, k := range []int{0, 2, 4, 8} {
		b.Run(fmt.Sprintf("inflight-%d", k), func(b *testing.B) {
			c, rt := benchClient(b, srv, redisengine.WithMaxInflight(k))
			if err := benchOnce(ctx, c, "warm-up"); err != nil {
				b.Fatal(err)
			}
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((64 + procs - 1) / procs)
			var ids atomic.Int64
			rt.single.Store(0)
			rt.pipelines.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				name := "bench-par-" + strconv.Itoa(int(ids.Add(1)))
				for pb.Next() {
					if err := benchOnce(ctx, c, name); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(rt.single.Load()+rt.pipelines.Load())/float64(b.N), "round-trips/op")
		})
	}
}

// BenchmarkPipelinePaired: one goroutine, batching on (the default) and off
// taking turns in one loop, so that both see the same machine; reports the
// mean time of each and their ratio. A lone caller must not pay for
// batching.
func BenchmarkPipelinePaired(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	on, _ := benchClient(b, srv)
	off, _ := benchClient(b, srv, redisengine.WithMaxInflight(0))
	var tOn, tOff time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		first, second := on, off
		if i%2 == 0 {
			first, second = off, on
		}
		t0 := time.Now()
		if err := benchOnce(ctx, first, "paired-"+strconv.Itoa(i%2)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := benchOnce(ctx, second, "paired-"+strconv.Itoa(1-i%2)); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if i%2 == 0 {
			tOff, tOn = tOff+t1.Sub(t0), tOn+t2.Sub(t1)
		} else {
			tOn, tOff = tOn+t1.Sub(t0), tOff+t2.Sub(t1)
		}
	}
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N), "batched-ns/op")
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "direct-ns/op")
	b.ReportMetric(float64(tOn)/float64(tOff), "batched/direct")
}
