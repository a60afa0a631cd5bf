package zookeeper_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestConformance runs the suite on one member and on three, every engine
// on a connection (a session) of its own, like a separate process, and
// the randomized checker on one member.
func TestConformance(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "1member", 3: "3members"}[n], func(t *testing.T) {
			t.Parallel()
			ens := shared(t, n)
			h := enginetest.Harness{
				New: func(t *testing.T) engine.Engine { return dial(t, ens.Servers()) },
			}
			enginetest.Run(t, h)
			if n == 1 {
				enginetest.Check(t, h) // the randomized checker, shared locks included
			}
		})
	}
}
