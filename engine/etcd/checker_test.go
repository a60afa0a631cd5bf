package etcd_test

import (
	"context"
	"sync"
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
	stalls := &enginetest.Stalls{}
	var mu sync.Mutex
	paused := map[*etcdtest.Member]int{} // stalls in force
	pause := func(m *etcdtest.Member, by int) {
		mu.Lock()
		defer mu.Unlock()
		switch paused[m] += by; {
		case by > 0 && paused[m] == 1:
			m.Stop()
		case by < 0 && paused[m] == 0:
			m.Cont()
		}
	}
	engines := 0
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			m := cl.Members[engines%len(cl.Members)]
			engines++
			e := etcdengine.New(cl.ClientOf(t, m.Client))
			t.Cleanup(func() { _ = e.Close() })
			stalls.Add(e, func(ctx context.Context, d time.Duration) {
				pause(m, 1)
				defer pause(m, -1)
				timer := time.NewTimer(d)
				defer timer.Stop()
				select {
				case <-timer.C:
				case <-ctx.Done():
				}
			})
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
