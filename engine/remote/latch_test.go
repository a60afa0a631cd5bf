package remote_test

import (
	"sync/atomic"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/server"
)

// TestLatch runs the countdown latch cases through two servers on one
// real redis-server, the engines taking turns between them (a resent
// CountDown may reach the other server; a waiter is woken through its
// server's subscription stream).
func TestLatch(t *testing.T) {
	_, urls := twoServers(t)
	var n atomic.Int64
	enginetest.RunLatch(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newRemote(t, urls[n.Add(1)%2]) },
	})
}

// TestLatchUnsupportedServer: through a server whose engine keeps no
// latches every latch call is an *UnsupportedError.
func TestLatchUnsupportedServer(t *testing.T) {
	_, url := startServer(t, struct{ engine.Engine }{newMemory(t)}, server.WithLogger(quietLogger()))
	enginetest.LatchUnsupported(t, newRemote(t, url))
}
