package etcd_test

// Acceptance tests written by a stranger to the engine, against real etcd
// processes, killed and restarted on their data dirs, and paused: the
// cases are enginetest's (TokensAcrossRestarts, ServerStopped); the
// stranger's engine-agnostic ones run in the conformance suite.

import (
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// strangerClient is a Client on an engine of its own etcd client (one
// process).
func strangerClient(t *testing.T, cl *etcdtest.Cluster) *distlock.Client {
	t.Helper()
	e := etcdengine.New(cl.Client(t))
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStrangerTokensAcrossKindsAndRestart: tokens across kinds, expiries,
// force-releases and restarts (enginetest.TokensAcrossRestarts), the
// member killed and started again on its data dir.
func TestStrangerTokensAcrossKindsAndRestart(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	enginetest.TokensAcrossRestarts(t, strangerClient(t, cl), 2*time.Second, cl.Members[0].Restart)
}

// TestStrangerServerStopped: the member stopped (SIGSTOP) past the
// holders' ttls with waiters queued (enginetest.ServerStopped).
func TestStrangerServerStopped(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	enginetest.ServerStopped(t, strangerClient(t, cl), strangerClient(t, cl), func() func() {
		cl.Members[0].Stop()
		return cl.Members[0].Cont
	})
}
