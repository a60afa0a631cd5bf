package postgres_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// benchEngines returns a function that makes engines on a pool of their
// own each, on one migrated schema.
func benchEngines(b *testing.B) func(*testing.B) engine.Engine {
	const schema = "bench"
	migrated(b, schema)
	return func(b *testing.B) engine.Engine { return newEngine(b, newPool(b), schema) }
}

// BenchmarkHandoff: release-to-grant time of a waiting Client
// (ns/handoff, the median).
func BenchmarkHandoff(b *testing.B) { enginetest.BenchHandoff(b, benchEngines(b)) }

// BenchmarkLoss: how late a lease without renewal is signalled lost after
// its deadline (ns/late-loss, the median).
func BenchmarkLoss(b *testing.B) { enginetest.BenchLoss(b, benchEngines(b)) }
