package redis_test

import (
	"context"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newEngine(t, srv) },
		Delete: func(t *testing.T, name string) {
			if err := srv.Del(context.Background(), redisengine.DefaultPrefix+"{"+name+"}"); err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return redistest.NewRegister(srv.Client(), "test:"+name)
		},
	})
}

// newEngine returns an engine on its own go-redis client, like a separate
// process would have.
func newEngine(t *testing.T, srv *redistest.Server) *redisengine.Engine {
	t.Helper()
	e, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// TestConformanceCluster runs the suite on a Redis Cluster of three
// masters through a go-redis ClusterClient: the scripts' keys share the
// lock's hash tag, pipelines are split by slot, and wake-ups use classic
// pub/sub, which the cluster bus carries to every node.
func TestConformanceCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			e, err := redisengine.New(cl.Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
		Delete: func(t *testing.T, name string) {
			if err := cl.Del(context.Background(), redisengine.DefaultPrefix+"{"+name+"}"); err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return redistest.NewRegister(cl.Client(), "test:"+name)
		},
	})
}
