package quorum_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/redistest"
)

// BenchmarkHandoff: release-to-grant time of a waiting Client on a quorum
// of five redis-servers (ns/handoff, the median).
func BenchmarkHandoff(b *testing.B) {
	srvs := redistest.StartN(b, 5)
	enginetest.BenchHandoff(b, func(b *testing.B) engine.Engine { return newQuorum(b, srvs) })
}

// BenchmarkLoss: how late a lease without renewal is signalled lost after
// its deadline (ns/late-loss, the median).
func BenchmarkLoss(b *testing.B) {
	srvs := redistest.StartN(b, 5)
	enginetest.BenchLoss(b, func(b *testing.B) engine.Engine { return newQuorum(b, srvs) })
}
