package postgres_test

import (
	"testing"
	"time"

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

// BenchmarkContended: bench/'s P3 as a go-test benchmark, with the cycle
// split (enginetest.BenchContended): 16 Clients on engines of their own,
// one name, hold 1 ms.
func BenchmarkContended(b *testing.B) {
	enginetest.BenchContended(b, 16, time.Millisecond, benchEngines(b))
}
