package zookeeper_test

import (
	"testing"

	"github.com/distlock/distlock/engine/enginetest"
)

// TestCheckerMutants shows that the randomized checker catches the engine
// broken in one way each (enginetest.CheckMutants: the wrapper mutants of
// docs/SAFETY.md's table), on the shared ensemble of one member.
func TestCheckerMutants(t *testing.T) {
	t.Parallel()
	enginetest.CheckMutants(t, harness(t, 1))
}
