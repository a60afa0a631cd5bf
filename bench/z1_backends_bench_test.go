package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
	redisengine "github.com/distlock/distlock/engine/redis"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/internal/redistest"
)

// BenchmarkZ1Backends runs Z1's workload (one goroutine, acquire+release
// of one name, p50 per pair) with the distlock Client on each backend in
// the same run: Redis (one redis-server), etcd and ZooKeeper (1 and 3
// members each, all on loopback): what each backend's guarantees cost for
// the same lock. Divide the p50s of one run (ZooKeeper ÷ etcd ÷ Redis);
// the servers share the machine's CPUs with the client, as in Z1.
//
//	go test -run '^$' -bench 'Z1Backends' -benchtime 500x -count 3 ./bench/
func BenchmarkZ1Backends(b *testing.B) {
	b.Run("redis", func(b *testing.B) {
		srv := redistest.Start(b)
		e, err := redisengine.New(srv.Client())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = e.Close() })
		z1On(b, e)
	})
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("etcd/members=%d", members), func(b *testing.B) {
			c := etcdtest.Start(b, members)
			e := etcdengine.New(c.Client(b))
			b.Cleanup(func() { _ = e.Close() })
			z1On(b, e)
		})
		b.Run(fmt.Sprintf("zookeeper/members=%d", members), func(b *testing.B) {
			ens := zktest.Start(b, members)
			e, err := zkengine.Dial(context.Background(), ens.Servers(), 0)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = e.Close() })
			z1On(b, e)
		})
	}
}

// z1On measures Z1 with a Client on e: 200 untimed pairs first (a JVM's
// compilation, connections), then b.N timed ones, reported as p50-ms.
func z1On(b *testing.B, e engine.Engine) {
	ctx := context.Background()
	c := distlock.New(e)
	b.Cleanup(func() { _ = c.Close() })
	name := fmt.Sprintf("z1b-%d", time.Now().UnixNano())
	pair := func() {
		l, err := c.Acquire(ctx, name, distlock.WithTTL(10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for range 200 {
		pair()
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		pair()
		took = append(took, time.Since(start))
	}
	b.ReportMetric(msAt(took, 0.50), "p50-ms")
}
