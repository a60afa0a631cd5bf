package redis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/stallproxy"
)

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	h := harness(func() goredis.UniversalClient { return srv.Client() }, srv.Del)
	enginetest.Run(t, h)
	enginetest.Check(t, checkerHarness(t))
	enginetest.CheckMutants(t, h)
}

// checkerHarness is the randomized checker's on a server of its own that
// persists every write before answering (appendfsync always: what
// docs/FENCING.md requires for tokens to keep their order across a
// restart). Each Client talks to it through a proxy that loses a reply when
// asked (go-redis then sends the command again), behind a proxy that
// stalls the Client's connections when asked; and the checker restarts
// the server (killed, started again on its port from its AOF).
func checkerHarness(t *testing.T) enginetest.Harness {
	srv := redistest.Start(t, redistest.WithPersistence())
	h := harness(func() goredis.UniversalClient { return srv.Client() }, srv.Del)
	stalls := &enginetest.Stalls{}
	h.Faulty = func(t *testing.T) (engine.Engine, func()) {
		stall, err := stallproxy.Listen(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stall.Close)
		drop := redistest.NewReplyDropper(t, stall.Addr())
		rdb := goredis.NewClient(&goredis.Options{Addr: drop.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true})
		t.Cleanup(func() { _ = rdb.Close() })
		e := listEngine(t, rdb)
		stalls.Add(e, stall.Stall)
		return e, drop.Arm
	}
	h.Faults = &enginetest.Faults{
		Stall:   stalls.Stall,
		Restart: func(context.Context) error { return srv.Restart() },
	}
	return h
}

// TestConformanceCluster runs the suite on a Redis Cluster of three
// masters through a go-redis ClusterClient: the scripts' keys share the
// lock's hash tag, pipelines are split by node, and wake-ups use sharded
// pub/sub on the master of each lock's slot.
func TestConformanceCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	h := harness(func() goredis.UniversalClient { return cl.Client() }, cl.Del)
	enginetest.Run(t, h)
	enginetest.Check(t, pausedNodes(h, cl.Nodes))
	enginetest.CheckMutants(t, h)
}

// pausedNodes is h with stalls for the randomized checker: a stall of an
// engine stops one node (SIGSTOP, the nodes in turn by engine) for a
// while; every Client's requests for that node's slots wait.
func pausedNodes(h enginetest.Harness, nodes []*redistest.Server) enginetest.Harness {
	stalls, pauses := &enginetest.Stalls{}, &enginetest.Pauses{}
	var engines atomic.Int64
	newEngine := h.New
	h.New = func(t *testing.T) engine.Engine {
		e := newEngine(t)
		n := nodes[int(engines.Add(1)-1)%len(nodes)]
		stalls.Add(e, func(ctx context.Context, d time.Duration) {
			pauses.Hold(ctx, n, d, func() { _ = n.Pause() }, func() { _ = n.Resume() })
		})
		return e
	}
	h.Faults = &enginetest.Faults{Stall: stalls.Stall}
	return h
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

// TestCheckerRestartWithoutPersistence is the control of the checker's
// restarts: a redis-server that persists nothing forgets its locks when it
// restarts, and the checker must see a lease surely live lost or shared,
// or a fair waiter's queue entry forgotten (a newcomer granted while it is
// surely queued).
func TestCheckerRestartWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t)
	h := harness(func() goredis.UniversalClient { return srv.Client() }, srv.Del)
	h.Faults = &enginetest.Faults{Restart: func(context.Context) error { return srv.Restart() }}
	enginetest.CheckCatches(t, h, 30*time.Second, nil, "exclusion:", "lost early", "view:", "tokens:", "queue:")
}
