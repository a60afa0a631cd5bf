package zookeeper_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
)

// TestRequests counts the ZooKeeper requests of the benchmarks' two
// workloads (bench/zookeeper_bench_test.go), on one member: Z1's
// uncontended acquire+release, and Z3's hand-offs among clients of one
// name. It logs them (what docs/ZOOKEEPER.md's Cost section quotes) and
// asserts the uncontended bound: one read and two transactions, as
// go-zookeeper's zk.Lock (create, list, delete).
func TestRequests(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Run("uncontended", func(t *testing.T) {
		e := dial(t, ens.Servers())
		c := distlock.New(e)
		t.Cleanup(func() { _ = c.Close() })
		const n = 20
		cycle := func() {
			l, err := c.Acquire(ctx, "requests-z1", distlock.WithTTL(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cycle() // the name's node made
		before := e.Requests()
		for range n {
			cycle()
		}
		got := e.Requests().Sub(before)
		t.Logf("per uncontended acquire+release: %s", perOp(got, n))
		if got.Writes > 2*n || got.Reads > n {
			t.Errorf("%d acquire+release cost %+v, want at most %d reads and %d writes", n, got, n, 2*n)
		}
	})
	t.Run("handoffs", func(t *testing.T) {
		const clients, each = 4, 10
		engines := make([]*zkengine.Engine, clients)
		var wg sync.WaitGroup
		for i := range engines {
			engines[i] = dial(t, ens.Servers())
		}
		before := make([]zkengine.Requests, clients)
		for i, e := range engines {
			before[i] = e.Requests()
		}
		for _, e := range engines {
			c := distlock.New(e)
			t.Cleanup(func() { _ = c.Close() })
			wg.Go(func() {
				for range each {
					l, err := c.Acquire(ctx, "requests-z3", distlock.WithTTL(10*time.Second))
					if err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Millisecond)
					if err := l.Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		var got zkengine.Requests
		for i, e := range engines {
			d := e.Requests().Sub(before[i])
			got.Reads, got.Writes = got.Reads+d.Reads, got.Writes+d.Writes
		}
		t.Logf("per acquisition among %d clients: %s", clients, perOp(got, clients*each))
	})
}

// perOp formats r divided by n operations.
func perOp(r zkengine.Requests, n int) string {
	f := func(v int64) float64 { return float64(v) / float64(n) }
	return fmt.Sprintf("%.2f reads, %.2f writes", f(r.Reads), f(r.Writes))
}
