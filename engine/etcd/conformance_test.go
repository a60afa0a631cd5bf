package etcd_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestConformance runs the suite on one etcd member, every engine on an
// etcd client of its own, like a separate process.
func TestConformance(t *testing.T) {
	enginetest.Run(t, harness(etcdtest.Start(t, 1)))
	// The randomized checker runs on three members, paused (TestChecker).
}

// harness gives every engine an etcd client of its own on cl.
func harness(cl *etcdtest.Cluster) enginetest.Harness {
	return enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			e := etcdengine.New(cl.Client(t))
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
	}
}
