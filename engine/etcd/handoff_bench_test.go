package etcd_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// benchEngines starts one etcd member and returns a function that makes
// engines on it, each on an etcd client of its own.
func benchEngines(b *testing.B) func(*testing.B) engine.Engine {
	cl := etcdtest.Start(b, 1)
	return func(b *testing.B) engine.Engine {
		e := etcdengine.New(cl.Client(b))
		b.Cleanup(func() { _ = e.Close() })
		return e
	}
}

// BenchmarkHandoff: release-to-grant time of a waiting Client
// (ns/handoff, the median).
func BenchmarkHandoff(b *testing.B) { enginetest.BenchHandoff(b, benchEngines(b)) }

// BenchmarkLoss: how late a lease without renewal (etcd's least ttl, 2s)
// is signalled lost after its deadline (ns/late-loss, the median).
func BenchmarkLoss(b *testing.B) { enginetest.BenchLoss(b, benchEngines(b)) }
