package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// BenchmarkZ1Refused measures what a refusal costs on ZooKeeper: a
// TryAcquire of a name another session holds, on ensembles of 1 and 3
// members (p50 per call, and the requests it sends). A refusal is decided
// on a line read after the session's member caught up with every
// transaction answered before the call (a write: docs/ZOOKEEPER.md), so
// that a member behind another does not refuse a lock released a moment
// before. zk.Lock has no try-lock, so there is no peer row:
//
//	go test -run '^$' -bench 'Z1Refused' -benchtime 400x ./bench/
func BenchmarkZ1Refused(b *testing.B) {
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			ens := zktest.Start(b, members)
			zkWarmUp(b, ens.Servers())
			ctx := context.Background()
			name := fmt.Sprintf("z1r-%d", time.Now().UnixNano())
			ls := zkClients(b, ens.Servers(), "distlock", name, 2)
			holder, tryer := ls[0].(*zkDistlock), ls[1].(*zkDistlock)
			if err := holder.lock(ctx); err != nil {
				b.Fatal(err)
			}
			defer holder.unlock(ctx)
			took := make([]time.Duration, 0, b.N)
			before := zkRequests(ls[1:])
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				_, err := tryer.c.TryAcquire(ctx, name, distlock.WithTTL(10*time.Second))
				took = append(took, time.Since(start))
				if !errors.Is(err, distlock.ErrLocked) {
					b.Fatalf("a TryAcquire of a held name answered %v, want ErrLocked", err)
				}
			}
			b.ReportMetric(msAt(took, 0.50), "p50-ms")
			reportRequests(b, ls[1:], before, b.N)
		})
	}
}
