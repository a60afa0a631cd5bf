package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// Benchmarks of sets of locks (issue 28; docs/BENCHMARKS.md, "Sets of
// locks"). Run them on a quiet machine:
//
//	go test -run '^$' -bench 'M1|M2' -benchtime 3s ./bench
//
// The peer of M1 is bsm/redislock v0.10.0's ObtainMulti (one script, all
// keys or none, no fencing token), on the same Redis server.

// multiEngines starts the engines the M benchmarks run on, and returns the
// Redis server's address for the peer.
func multiEngines(b *testing.B) (map[string]engine.Engine, string) {
	srv := redistest.Start(b)
	r, err := redisengine.New(srv.ClientWithPool(64))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	return map[string]engine.Engine{"memory": memory.New(), "redis": r}, srv.Addr()
}

func setNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return names
}

// BenchmarkM1: a set of 2 and of 8 names, uncontended: AcquireAll and
// Release of the set, against acquiring and releasing the names one by one
// (in sorted order, the safe way by hand), and one single lock for scale
// (the target: a set of 8 at most 1.5x a single acquire on one Redis).
func BenchmarkM1(b *testing.B) {
	engines, addr := multiEngines(b)
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	b.Cleanup(func() { _ = rdb.Close() })
	peer := redislock.New(rdb)
	for _, en := range []string{"memory", "redis"} {
		c := distlock.New(engines[en])
		b.Cleanup(func() { _ = c.Close() })
		ctx := context.Background()
		b.Run(en+"/single", func(b *testing.B) {
			for b.Loop() {
				l, err := c.Acquire(ctx, "m1-single")
				if err != nil {
					b.Fatal(err)
				}
				_ = l.Release(ctx)
			}
		})
		for _, n := range []int{2, 8} {
			names := setNames(fmt.Sprintf("m1-%d-", n), n)
			b.Run(fmt.Sprintf("%s/set%d/AcquireAll", en, n), func(b *testing.B) {
				for b.Loop() {
					s, err := c.AcquireAll(ctx, names)
					if err != nil {
						b.Fatal(err)
					}
					_ = s.Release(ctx)
				}
			})
			b.Run(fmt.Sprintf("%s/set%d/one-by-one", en, n), func(b *testing.B) {
				for b.Loop() {
					leases := make([]*distlock.Lease, 0, n)
					for _, name := range names {
						l, err := c.Acquire(ctx, name)
						if err != nil {
							b.Fatal(err)
						}
						leases = append(leases, l)
					}
					for _, l := range leases {
						_ = l.Release(ctx)
					}
				}
			})
			if en != "redis" {
				continue
			}
			b.Run(fmt.Sprintf("%s/set%d/redislock-ObtainMulti", en, n), func(b *testing.B) {
				keys := setNames(fmt.Sprintf("m1-peer-%d-", n), n)
				for b.Loop() {
					l, err := peer.ObtainMulti(ctx, keys, time.Minute, nil)
					if err != nil {
						b.Fatal(err)
					}
					_ = l.Release(ctx)
				}
			})
		}
	}
}

// BenchmarkM2: 16 Clients, each taking random sets of 3 out of 20 names
// and holding them 1 ms: AcquireAll against ordered sequential acquisition
// (Acquire of each name in sorted order). It reports grants per second, the
// p99 wait and the deadlocks (calls still waiting after 10 s: none
// expected from either, since both go in one order).
func BenchmarkM2(b *testing.B) {
	const clients, pool, size = 16, 20, 3
	engines, _ := multiEngines(b)
	names := setNames("m2-", pool)
	for _, en := range []string{"memory", "redis"} {
		for _, way := range []string{"AcquireAll", "ordered-sequential"} {
			b.Run(en+"/"+way, func(b *testing.B) {
				cs := make([]*distlock.Client, clients)
				for i := range cs {
					cs[i] = distlock.New(engines[en])
				}
				defer func() {
					for _, c := range cs {
						_ = c.Close()
					}
				}()
				var mu sync.Mutex
				var waits []time.Duration
				deadlocks := 0
				per := (b.N + clients - 1) / clients
				start := time.Now()
				var wg sync.WaitGroup
				for _, c := range cs {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(rand.Uint64(), 1))
						for range per {
							set := pickSet(r, names, size)
							t0 := time.Now()
							release, err := takeSet(c, set, way == "AcquireAll")
							waited := time.Since(t0)
							mu.Lock()
							if err != nil {
								deadlocks++
							} else {
								waits = append(waits, waited)
							}
							mu.Unlock()
							if err == nil {
								time.Sleep(time.Millisecond)
								release()
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				slices.Sort(waits)
				if len(waits) > 0 {
					b.ReportMetric(float64(len(waits))/elapsed.Seconds(), "grants/s")
					b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "p99_wait_ms")
				}
				b.ReportMetric(float64(deadlocks), "deadlocks")
			})
		}
	}
}

// pickSet returns size distinct names of pool, in random order.
func pickSet(r *rand.Rand, pool []string, size int) []string {
	idx := r.Perm(len(pool))[:size]
	set := make([]string, size)
	for i, j := range idx {
		set[i] = pool[j]
	}
	return set
}

// takeSet takes set with AcquireAll (all), or by Acquire of each name in
// sorted order, within 10 s, and returns its release.
func takeSet(c *distlock.Client, set []string, all bool) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if all {
		s, err := c.AcquireAll(ctx, set)
		if err != nil {
			return nil, err
		}
		return func() { _ = s.Release(context.Background()) }, nil
	}
	sorted := slices.Sorted(slices.Values(set))
	var leases []*distlock.Lease
	release := func() {
		for _, l := range leases {
			_ = l.Release(context.Background())
		}
	}
	for _, name := range sorted {
		l, err := c.Acquire(ctx, name)
		if err != nil {
			release()
			return nil, err
		}
		leases = append(leases, l)
	}
	return release, nil
}
