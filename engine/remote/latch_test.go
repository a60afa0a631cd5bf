package remote_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/distlock/distlock"
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
	c := distlock.New(newRemote(t, url))
	defer c.Close()
	ctx := context.Background()
	l := c.CountDownLatch("l")
	_, err1 := l.TrySetCount(ctx, 1)
	_, err2 := l.Count(ctx)
	for _, err := range []error{err1, err2, l.CountDown(ctx), l.Wait(ctx)} {
		var ue *distlock.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("%v, want an *UnsupportedError", err)
		}
	}
}
