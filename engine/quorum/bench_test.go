package quorum_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/internal/redistest"
)

// BenchmarkQuorum: uncontended acquire+release from one goroutine, on one
// node and on five (with and without phase-2 fencing, with fail-fast, and
// with one node SIGSTOPped), next to the round-trip floor of each: two
// rounds of PINGs, each round sent to every node at once and done when a
// majority answered. It reports the median and p99 latency besides the
// mean (ns/op).
//
//	go test -run '^$' -bench Quorum -benchtime 3000x -count 5 ./engine/quorum/
func BenchmarkQuorum(b *testing.B) {
	srvs := redistest.StartN(b, 5)
	cases := []struct {
		name   string
		nodes  int
		opts   []quorum.Option
		paused bool
	}{
		{"nodes=1", 1, nil, false},
		{"nodes=5", 5, nil, false},
		{"nodes=5/no-fencing", 5, []quorum.Option{quorum.WithoutFencing()}, false},
		{"nodes=5/fail-fast", 5, []quorum.Option{quorum.WithFailFast()}, false},
		{"nodes=5/one-paused", 5, nil, true},
		{"nodes=5/one-paused/fail-fast", 5, []quorum.Option{quorum.WithFailFast()}, true},
	}
	for _, n := range []int{1, 5} {
		b.Run("floor/nodes="+strconv.Itoa(n), func(b *testing.B) {
			benchPingFloor(b, srvs[:n])
		})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			// The default per-node timeout (not the tests' long one).
			c := newClient(b, srvs[:tc.nodes], append([]quorum.Option{quorum.WithNodeTimeout(0)}, tc.opts...)...)
			ctx := context.Background()
			opt := distlock.WithTTL(10 * time.Second) // per-node timeout 50ms
			if l, err := c.Acquire(ctx, "bench"); err == nil {
				_ = l.Release(ctx) // warm the connections
			}
			if tc.paused {
				if err := srvs[4].Pause(); err != nil {
					b.Fatal(err)
				}
				defer srvs[4].Resume()
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				l, err := c.TryAcquire(ctx, "bench", opt)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// benchPingFloor times two rounds of PINGs to srvs, each round done when a
// majority answered (the others are waited for before the next op, off the
// clock, so that rounds do not pile up).
func benchPingFloor(b *testing.B, srvs []*redistest.Server) {
	ctx := context.Background()
	clients := make([]*goredis.Client, len(srvs))
	for i, s := range srvs {
		clients[i] = s.Client()
	}
	majority := len(srvs)/2 + 1
	answers := make(chan struct{}, len(srvs))
	round := func() {
		for _, c := range clients {
			go func() {
				_ = c.Ping(ctx).Err()
				answers <- struct{}{}
			}()
		}
		for range majority {
			<-answers
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		round()
		round()
		lat = append(lat, time.Since(start))
		b.StopTimer()
		for range 2*len(srvs) - 2*majority {
			<-answers
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
