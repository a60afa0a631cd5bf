package memory_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
)

// benchEngine returns a function that gives every caller one shared
// embedded engine, closed when the benchmark ends.
func benchEngine(b *testing.B) func(*testing.B) engine.Engine {
	shared := memory.New()
	b.Cleanup(func() { _ = shared.Close() })
	return func(*testing.B) engine.Engine { return shared }
}

// BenchmarkHandoff: release-to-grant time of a waiting Client
// (ns/handoff, the median).
func BenchmarkHandoff(b *testing.B) { enginetest.BenchHandoff(b, benchEngine(b)) }

// BenchmarkLoss: how late a lease without renewal is signalled lost after
// its deadline (ns/late-loss, the median).
func BenchmarkLoss(b *testing.B) { enginetest.BenchLoss(b, benchEngine(b)) }
