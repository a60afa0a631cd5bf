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
// pauses and restarts members during the histories: the checker stalls an
// engine by stopping its member (SIGSTOP) for a while, and restarts a
// member (killed, started again on its data dir); a stopped or restarted
// leader makes the others elect a new one.
func TestChecker(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	stalls, pauses := &enginetest.Stalls{}, &enginetest.Pauses{}
	var engines, restarts atomic.Int64 // the mutants' subtests ask in parallel
	admin := cl.Client(t)
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
			// A restart kills one member (in turn) and starts it again on
			// its data dir, and waits until the cluster has a leader.
			Restart: func(ctx context.Context) error {
				cl.Members[int(restarts.Add(1)-1)%len(cl.Members)].Restart()
				for {
					if _, err := cl.Leader(admin); err == nil {
						return nil
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(20 * time.Millisecond): // polling the cluster, not waiting for a time
					}
				}
			},
			// A new leader restarts every lease at its full ttl, at every
			// election (Renews): a lease may outlive its ttl by its ttl
			// after the last fault it overlapped, plus the longest ttl of
			// the histories (three times the shortest) and an election
			// (etcd's default timeout, 1 s, twice).
			Slack:  3*etcdengine.MinTTL + 2*time.Second,
			Renews: true, // every new leader restarts every lease, once per election
		},
	}
	enginetest.Check(t, h)
	enginetest.CheckMutants(t, h)
}
