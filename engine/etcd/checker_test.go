package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestChecker runs the randomized checker on a cluster of three members,
// each engine on an etcd client of one member (the members in turn), and
// pauses members during the histories: the checker stalls an engine by
// stopping its member (SIGSTOP) for a while, and a stopped leader makes
// the others elect a new one.
func TestChecker(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	stalls, pauses := &enginetest.Stalls{}, &enginetest.Pauses{}
	var engines atomic.Int64 // the mutants' subtests ask in parallel
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			m := cl.Members[int(engines.Add(1)-1)%len(cl.Members)]
			e := etcdengine.New(cl.ClientOf(t, m.Client))
			t.Cleanup(func() { _ = e.Close() })
			stalls.Add(e, func(ctx context.Context, d time.Duration) { pauses.Hold(ctx, m, d, m.Stop, m.Cont) })
			return e
		},
		Faults: &enginetest.Faults{
			Stall: stalls.Stall,
			// A new leader restarts every lease at its full ttl: a lease may
			// outlive its ttl by the longest ttl of the histories (three
			// times the shortest) and an election (etcd's default timeout,
			// 1 s, twice).
			Slack: 3*etcdengine.MinTTL + 2*time.Second,
		},
	}
	enginetest.Check(t, h)
	enginetest.CheckMutants(t, h)
}
