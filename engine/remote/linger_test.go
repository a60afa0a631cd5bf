package remote_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubscriptionLingers: a lock's event stream stays open for the linger
// (500 ms) after its last subscription closed, and a subscription made
// meanwhile reuses it: here no new stream could be opened (the server
// drops every new connection), and the reused stream still delivers
// releases.
func TestSubscriptionLingers(t *testing.T) {
	mem := newMemory(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{Listener: ln}
	_, url := startServerOn(t, mem, g)
	e := newRemote(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub, err := e.Subscribe(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	g.shut.Store(true)
	sub.Close()
	closed := time.Now()
	if gap := time.Since(closed); gap > lingerSlack {
		t.Skipf("machine too slow: %v between the close and the next subscription, the linger is 500ms", gap)
	}
	sub, err = e.Subscribe(ctx, "n")
	if err != nil {
		t.Fatalf("a subscription within the linger needed a new stream: %v", err)
	}
	defer sub.Close()
	releaseWakes(t, ctx, mem, "n", sub)
}

// lingerSlack is how late the second subscription may start for the test
// to judge the 500 ms linger.
const lingerSlack = 250 * time.Millisecond

// gate is a listener that, once shut, drops every connection it accepts.
type gate struct {
	net.Listener
	shut atomic.Bool
}

func (g *gate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil || !g.shut.Load() {
			return c, err
		}
		c.Close()
	}
}
