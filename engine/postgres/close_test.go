package postgres_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// TestCloseStalledServer: an engine opened by URL whose server stops
// answering (every byte held by a paused proxy, as a SIGSTOPped
// postmaster and backends hold them) closes without waiting on its
// stalled connections: a call in flight without a deadline, a call whose
// context ended (pgx's cleanup of its connection waits up to 15 s for the
// cancel request's answer) and the listening connection. Close returns
// while the server is still stalled, and the call in flight then fails
// instead of waiting for the server.
func TestCloseStalledServer(t *testing.T) {
	const schema = "close_stalled"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy, err := pgtest.NewProxy(net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	url := strings.Replace(srv.URL("schema="+schema), "127.0.0.1:"+strconv.Itoa(srv.Port), proxy.Addr(), 1)
	eng, err := engine.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	e := eng.(*postgres.Engine)
	name := uniqueName(t)
	sub, err := e.Subscribe(ctx, name) // the listening connection LISTENs
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := e.Count(ctx, name); err != nil {
		t.Fatal(err)
	}

	proxy.Pause()
	defer proxy.Resume()
	cctx, ccancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, err := e.Count(cctx, name); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call on the stalled server: %v; want its context's end", err)
	}
	ccancel()
	inFlight := make(chan error, 1)
	go func() {
		_, err := e.Count(context.Background(), name) // waits for the server
		inFlight <- err
	}()
	waitFor(t, "the call in flight to wait for the server", func() bool {
		return blockedIn("postgres.(*Engine).Count", "poll.(*FD).Read", "puddle/v2.(*Pool[...]).initResourceValue")
	})

	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	// The documented bound is 2 s; 10 s allows for a loaded machine and is
	// still below the 15 s pgx waits for a stalled connection's cleanup.
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		proxy.Resume()
		<-closed
		t.Fatal("Close waited on the stalled connections: it returned only once the server answered")
	}
	select {
	case err := <-inFlight:
		if err == nil || errors.Is(err, engine.ErrClosed) {
			t.Fatalf("the call in flight on the stalled server: %v; want its connection's failure", err)
		}
	case <-time.After(10 * time.Second):
		proxy.Resume()
		t.Fatalf("the call in flight still waits for the stalled server after Close; then: %v", <-inFlight)
	}
	if _, err := e.Count(ctx, name); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("a call after Close: %v; want engine.ErrClosed", err)
	}
}

// blockedIn reports whether a goroutine's stack has the function fn and
// one of waits: a call blocked in a read of its connection, or in the
// making of a connection (puddle's, whose dial and startup another
// goroutine runs).
func blockedIn(fn string, waits ...string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, fn) {
			continue
		}
		for _, w := range waits {
			if strings.Contains(g, w) {
				return true
			}
		}
	}
	return false
}
