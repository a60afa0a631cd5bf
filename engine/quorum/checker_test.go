package quorum_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/stallproxy"
)

// stalledQuorums is h for the randomized checker: each quorum engine
// reaches each node through a proxy of its own, and a stall of the engine
// holds its connections to one node (the nodes in turn): a straggler the
// quorum must do without, or wait for, while its Client goes on.
func stalledQuorums(h enginetest.Harness, srvs []*redistest.Server) enginetest.Harness {
	stalls := &enginetest.Stalls{}
	h.New = func(t *testing.T) engine.Engine {
		proxies := make([]*stallproxy.Proxy, len(srvs))
		nodes := make([]engine.Engine, len(srvs))
		for i, s := range srvs {
			p, err := stallproxy.Listen(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true})
			t.Cleanup(func() { _ = c.Close() })
			e, err := redisengine.New(c)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			proxies[i], nodes[i] = p, e
		}
		q, err := quorum.New(nodes, quorum.WithNodeTimeout(testNodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		var next atomic.Int64
		stalls.Add(q, func(ctx context.Context, d time.Duration) {
			proxies[int(next.Add(1)-1)%len(proxies)].Stall(ctx, d)
		})
		return q
	}
	h.Faults = &enginetest.Faults{Stall: stalls.Stall}
	return h
}
