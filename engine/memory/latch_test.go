package memory_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
)

// TestLatch runs the countdown latch cases on one embedded engine shared
// by every Client.
func TestLatch(t *testing.T) {
	shared := memory.New()
	t.Cleanup(func() { _ = shared.Close() })
	enginetest.RunLatch(t, enginetest.Harness{New: func(t *testing.T) engine.Engine { return shared }})
}
