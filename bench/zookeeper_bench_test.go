package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// The ZooKeeper scenarios (issue 27), as Go benchmarks on ensembles of one
// and three members started by engine/zookeeper's harness (zktest), against
// go-zookeeper's own zk.Lock (Curator's recipe in Go):
//
//	Z1: uncontended acquire+release from one goroutine (p50 per pair);
//	Z3: 16 clients (a session each) on one name, each holding 1 ms
//	    (acquisitions per second, p99 wait).
//
// distlock's rows also report the ZooKeeper requests per operation
// (reads/op, writes/op: transactions). zk.Lock's are its recipe's: an
// uncontended lock+unlock is a create, a listing and a deletion (2
// writes, 1 read); a contended acquisition adds a watch and a listing per
// wake-up.
//
// Run them on a quiet machine only:
//
//	go test -run '^$' -bench 'Z[13]' -benchtime 2000x ./bench/
//
// Z1Paired times the two Z1 locks in alternation within each iteration:
// its ratio is the one to read on a machine shared with other work.

// zkLocker is one client of a benchmark: acquire and release one name.
type zkLocker interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
}

// zkDistlock is a distlock Client on the ZooKeeper engine.
type zkDistlock struct {
	e    *zkengine.Engine
	c    *distlock.Client
	name string
	l    *distlock.Lease
}

func (d *zkDistlock) lock(ctx context.Context) (err error) {
	d.l, err = d.c.Acquire(ctx, d.name, distlock.WithTTL(10*time.Second))
	return err
}
func (d *zkDistlock) unlock(ctx context.Context) error { return d.l.Release(ctx) }

// zkRecipe is go-zookeeper's zk.Lock on a session of its own.
type zkRecipe struct{ l *zk.Lock }

func (r *zkRecipe) lock(context.Context) error   { return r.l.Lock() }
func (r *zkRecipe) unlock(context.Context) error { return r.l.Unlock() }

// zkClients returns n lockers of kind ("distlock" or "zk.Lock") on name,
// each on its own session, closed when b ends.
func zkClients(b *testing.B, servers []string, kind, name string, n int) []zkLocker {
	b.Helper()
	out := make([]zkLocker, n)
	for i := range out {
		switch kind {
		case "distlock":
			e, err := zkengine.Dial(context.Background(), servers, 0)
			if err != nil {
				b.Fatal(err)
			}
			c := distlock.New(e)
			b.Cleanup(func() { _ = c.Close(); _ = e.Close() })
			out[i] = &zkDistlock{e: e, c: c, name: name}
		default:
			conn, _, err := zk.Connect(servers, 40*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(conn.Close)
			out[i] = &zkRecipe{l: zk.NewLock(conn, "/zklock/"+name, zk.WorldACL(zk.PermAll))}
		}
	}
	return out
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// zkRequests returns the ZooKeeper requests the distlock lockers of ls
// sent so far (none for zk.Lock's).
func zkRequests(ls []zkLocker) (sum zkengine.Requests) {
	for _, l := range ls {
		if d, ok := l.(*zkDistlock); ok {
			r := d.e.Requests()
			sum.Reads, sum.Writes = sum.Reads+r.Reads, sum.Writes+r.Writes
		}
	}
	return sum
}

// reportRequests reports the requests sent since before per operation
// (n operations), for distlock's lockers.
func reportRequests(b *testing.B, ls []zkLocker, before zkengine.Requests, n int) {
	if _, ok := ls[0].(*zkDistlock); !ok || n == 0 {
		return
	}
	d := zkRequests(ls).Sub(before)
	b.ReportMetric(float64(d.Reads)/float64(n), "reads/op")
	b.ReportMetric(float64(d.Writes)/float64(n), "writes/op")
}

// zkWarmUp runs 200 uncontended acquire+release of each kind, untimed:
// the ensemble's JVM compiles its hot paths during the first thousands of
// requests, and without this the kind measured first pays for it.
func zkWarmUp(b *testing.B, servers []string) {
	ctx := context.Background()
	for _, kind := range []string{"distlock", "zk.Lock"} {
		l := zkClients(b, servers, kind, "warm-up", 1)[0]
		for range 200 {
			if err := l.lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := l.unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// zkEnsembles runs fn under a sub-benchmark per ensemble size and kind.
func zkEnsembles(b *testing.B, fn func(b *testing.B, servers []string, kind string)) {
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			ens := zktest.Start(b, members)
			zkWarmUp(b, ens.Servers())
			for _, kind := range []string{"distlock", "zk.Lock"} {
				b.Run(kind, func(b *testing.B) { fn(b, ens.Servers(), kind) })
			}
		})
	}
}

// BenchmarkZ1 measures an uncontended acquire+release.
func BenchmarkZ1(b *testing.B) {
	zkEnsembles(b, func(b *testing.B, servers []string, kind string) {
		ctx := context.Background()
		ls := zkClients(b, servers, kind, fmt.Sprintf("z1-%d", time.Now().UnixNano()), 1)
		l := ls[0]
		took := make([]time.Duration, 0, b.N)
		before := zkRequests(ls)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if err := l.lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := l.unlock(ctx); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		b.ReportMetric(msAt(took, 0.50), "p50-ms")
		reportRequests(b, ls, before, b.N)
	})
}

// BenchmarkZ1Paired is Z1 with distlock and zk.Lock timed in alternation
// within each iteration (the order swapped every other one), so that a
// loaded machine's swings fall on both alike: p50 of each, and their
// ratio (distlock ÷ zk.Lock).
func BenchmarkZ1Paired(b *testing.B) {
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			ens := zktest.Start(b, members)
			zkWarmUp(b, ens.Servers())
			ctx := context.Background()
			name := fmt.Sprintf("z1p-%d", time.Now().UnixNano())
			ls := [2]zkLocker{zkClients(b, ens.Servers(), "distlock", name, 1)[0], zkClients(b, ens.Servers(), "zk.Lock", name, 1)[0]}
			took := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
			b.ResetTimer()
			for i := range b.N {
				for j := range 2 {
					k := (i + j) % 2
					start := time.Now()
					if err := ls[k].lock(ctx); err != nil {
						b.Fatal(err)
					}
					if err := ls[k].unlock(ctx); err != nil {
						b.Fatal(err)
					}
					took[k] = append(took[k], time.Since(start))
				}
			}
			d, z := msAt(took[0], 0.50), msAt(took[1], 0.50)
			b.ReportMetric(d, "distlock-p50-ms")
			b.ReportMetric(z, "zk.Lock-p50-ms")
			b.ReportMetric(d/z, "ratio")
		})
	}
}

// BenchmarkZ3 measures 16 clients on one name, each holding 1 ms, for b.N
// acquisitions in all.
func BenchmarkZ3(b *testing.B) {
	const clients = 16
	zkEnsembles(b, func(b *testing.B, servers []string, kind string) {
		ctx := context.Background()
		ls := zkClients(b, servers, kind, fmt.Sprintf("z3-%d", time.Now().UnixNano()), clients)
		var (
			mu    sync.Mutex
			waits []time.Duration
			left  = b.N
			wg    sync.WaitGroup
			first error
		)
		before := zkRequests(ls)
		b.ResetTimer()
		start := time.Now()
		for _, l := range ls {
			wg.Go(func() {
				for {
					mu.Lock()
					if left == 0 || first != nil {
						mu.Unlock()
						return
					}
					left--
					mu.Unlock()
					asked := time.Now()
					err := l.lock(ctx)
					if err == nil {
						waited := time.Since(asked)
						time.Sleep(time.Millisecond)
						err = l.unlock(ctx)
						mu.Lock()
						waits = append(waits, waited)
						mu.Unlock()
					}
					if err != nil {
						mu.Lock()
						first = err
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
		b.ReportMetric(float64(len(waits))/time.Since(start).Seconds(), "acq/s")
		b.ReportMetric(msAt(waits, 0.99), "p99-wait-ms")
		reportRequests(b, ls, before, len(waits))
	})
}

// msAt returns the q-quantile of ds in milliseconds.
func msAt(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / float64(time.Millisecond)
}
