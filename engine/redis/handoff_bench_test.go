package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// benchEngines returns a function that makes Redis engines, each on a
// client of its own from client, closed when the benchmark ends.
func benchEngines(client func() goredis.UniversalClient) func(*testing.B) engine.Engine {
	return func(b *testing.B) engine.Engine {
		e, err := redisengine.New(client())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = e.Close() })
		return e
	}
}

// BenchmarkHandoff: release-to-grant time of a waiting Client on one
// redis-server (ns/handoff, the median).
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.Start(b)
	enginetest.BenchHandoff(b, benchEngines(func() goredis.UniversalClient { return srv.Client() }))
}

// BenchmarkHandoffCluster: the same on a Redis Cluster of three masters.
func BenchmarkHandoffCluster(b *testing.B) {
	cl := redistest.StartCluster(b, 3)
	enginetest.BenchHandoff(b, benchEngines(func() goredis.UniversalClient { return cl.Client() }))
}

// BenchmarkLoss: how late a lease without renewal is signalled lost after
// its deadline (ns/late-loss, the median).
func BenchmarkLoss(b *testing.B) {
	srv := redistest.Start(b)
	enginetest.BenchLoss(b, benchEngines(func() goredis.UniversalClient { return srv.Client() }))
}
