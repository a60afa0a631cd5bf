package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/redistest"
)

// TestLatch runs the countdown latch cases on one redis-server, every
// engine on a client of its own, and a CountDown whose reply a proxy
// loses (go-redis sends it again): the checker's harness (checkerHarness).
func TestLatch(t *testing.T) {
	enginetest.RunLatch(t, checkerHarness(t))
}

// TestLatchCluster runs them on a Redis Cluster of three masters (the
// wake-up at zero on sharded pub/sub).
func TestLatchCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	enginetest.RunLatch(t, harness(func() goredis.UniversalClient { return cl.Client() }, cl.Del))
}
