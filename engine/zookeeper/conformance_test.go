package zookeeper_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
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
// on one member and on three, beside the suite (its short budget each).
func TestChecker(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "1member", 3: "3members"}[n], func(t *testing.T) {
			t.Parallel()
			enginetest.Check(t, harness(t, n))
		})
	}
}

// harness gives each engine a connection of its own to the shared
// ensemble of n members.
func harness(t *testing.T, n int) enginetest.Harness {
	ens := shared(t, n)
	return enginetest.Harness{New: func(t *testing.T) engine.Engine { return dial(t, ens.Servers()) }}
}
