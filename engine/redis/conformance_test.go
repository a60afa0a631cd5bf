package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	h := harness(func() goredis.UniversalClient { return srv.Client() }, srv.Del)
	enginetest.Run(t, h)
	// The checker's Clients talk to Redis through proxies that lose a
	// reply when asked (go-redis then sends the command again).
	h.Faulty = faulty(srv)
	enginetest.Check(t, h)
}

// faulty returns engines on srv through proxies that lose a reply when
// asked (Harness.Faulty).
func faulty(srv *redistest.Server) func(t *testing.T) (engine.Engine, func()) {
	return func(t *testing.T) (engine.Engine, func()) {
		drop := redistest.NewReplyDropper(t, srv.Addr())
		rdb := goredis.NewClient(&goredis.Options{Addr: drop.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true})
		t.Cleanup(func() { _ = rdb.Close() })
		return listEngine(t, rdb), drop.Arm
	}
}

// TestConformanceCluster runs the suite on a Redis Cluster of three
// masters through a go-redis ClusterClient: the scripts' keys share the
// lock's hash tag, pipelines are split by node, and wake-ups use sharded
// pub/sub on the master of each lock's slot.
func TestConformanceCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	h := harness(func() goredis.UniversalClient { return cl.Client() }, cl.Del)
	enginetest.Run(t, h)
	enginetest.Check(t, h)
}

// harness runs the suite with every engine on a client of its own from
// client, like a separate process would have, and deletes keys with del.
func harness(client func() goredis.UniversalClient, del func(context.Context, ...string) error) enginetest.Harness {
	return enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return listEngine(t, client()) },
		Delete: func(t *testing.T, name string) {
			if err := del(context.Background(), redisengine.DefaultPrefix+"{"+name+"}"); err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return redistest.NewRegister(client(), "test:"+name)
		},
	}
}
