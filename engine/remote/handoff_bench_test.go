package remote_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// BenchmarkHandoff: release-to-grant time of a waiting Client through two
// servers on one redis-server, the holder on one and the waiter on the
// other (ns/handoff, the median).
func BenchmarkHandoff(b *testing.B) {
	_, urls := twoServers(b)
	n := 0
	enginetest.BenchHandoff(b, func(b *testing.B) engine.Engine {
		n++
		return newRemote(b, urls[n%2])
	})
}

// BenchmarkLoss: how late a lease without renewal is signalled lost after
// its deadline (ns/late-loss, the median).
func BenchmarkLoss(b *testing.B) {
	_, urls := twoServers(b)
	enginetest.BenchLoss(b, func(b *testing.B) engine.Engine { return newRemote(b, urls[0]) })
}
