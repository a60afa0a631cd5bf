package zookeeper_test

import (
	"sync/atomic"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/stallproxy"
)

// TestConformance runs the suite on one member and on three, every engine
// on a connection (a session) of its own, like a separate process.
func TestConformance(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "1member", 3: "3members"}[n], func(t *testing.T) {
			t.Parallel()
			enginetest.Run(t, harness(t, n))
		})
	}
}

// TestChecker runs the randomized checker (mutexes, semaphores, RW locks)
// on one member and on three, beside the suite (its short budget each),
// with stalls (checkerHarness).
func TestChecker(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "1member", 3: "3members"}[n], func(t *testing.T) {
			t.Parallel()
			enginetest.Check(t, checkerHarness(t, n))
		})
	}
}

// checkerHarness is harness with stalls for the randomized checker: each
// engine reaches one member (the members in turn) through a proxy of its
// own, and a stall holds its session's traffic both ways for a while
// (requests, answers and heartbeats wait; the connection stays open, as
// with a stalled network or a paused client process).
func checkerHarness(t *testing.T, n int) enginetest.Harness {
	ens := shared(t, n)
	stalls := &enginetest.Stalls{}
	var engines atomic.Int64
	return enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			m := ens.Members[int(engines.Add(1)-1)%len(ens.Members)]
			p, err := stallproxy.Listen(m.Addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			e := dial(t, []string{p.Addr()})
			stalls.Add(e, p.Stall)
			return e
		},
		Faults: &enginetest.Faults{Stall: stalls.Stall},
	}
}

// harness gives each engine a connection of its own to the shared
// ensemble of n members.
func harness(t *testing.T, n int) enginetest.Harness {
	ens := shared(t, n)
	return enginetest.Harness{New: func(t *testing.T) engine.Engine { return dial(t, ens.Servers()) }}
}
