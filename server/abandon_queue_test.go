package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// TestAbandonedHeldOpenGrantLeavesNoWaiter: a held-open acquire (the
// server's own owner and queue entry) is woken and granted, but the
// grant's answer reaches the server only after the client went away. The
// server takes the grant back with an undo, which puts the queue entry the
// grant took out back in its place; the wait is over, so the server leaves
// the queue again: once it has settled, the name is free with nobody
// waiting. Before, the server's entry stayed at the head until its
// heartbeat deadline, the lock kept for a wait that was over.
func TestAbandonedHeldOpenGrantLeavesNoWaiter(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	late := &lateGrants{Engine: mem, held: make(chan struct{}), gate: make(chan struct{})}
	s := start(t, late)
	t.Cleanup(late.open) // a failed test's held answer: before the server's shutdown (cleanups run last first)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	mustAcquire(t, s, "q", map[string]any{"owner": "h", "ttl_ms": 60000})

	cctx, leave := context.WithCancel(ctx)
	defer leave()
	answered := make(chan error, 1)
	go func() {
		// A client that goes away: not callCtx, which fails the test on
		// the cancelled request.
		req, err := http.NewRequestWithContext(cctx, "POST", lockURL(s, "q", "acquire"), strings.NewReader(`{"wait_ms": 50000}`))
		if err == nil {
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
		answered <- err
	}()
	waitFor(t, patience, "the held-open acquire to queue", func() bool { return waiters(t, mem, "q") == 1 })
	if _, err := mem.Release(ctx, engine.ReleaseRequest{Name: "q", Owner: "h"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-late.held: // granted in the engine; the answer held back
	case err := <-answered:
		t.Fatalf("answered before the grant: %v", err)
	}
	leave() // the client goes away
	<-answered
	late.open()
	// Shutdown waits for the late answer's settling.
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := mem.Inspect(ctx, "q")
	if err != nil || info.Held || info.Waiters != 0 {
		t.Fatalf("after the late grant was settled: %+v, %v; want free with nobody waiting", info, err)
	}
}

// lateGrants holds back the answer of the first acquire of a queued
// waiter it sees granted (held closed) until gate is closed: the request
// ran in the engine, its answer comes late.
type lateGrants struct {
	*memory.Engine
	held, gate chan struct{}
	once       atomic.Bool
	opened     sync.Once
}

// open lets the held-back reply go (once; again is nothing).
func (e *lateGrants) open() { e.opened.Do(func() { close(e.gate) }) }

func (e *lateGrants) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := e.Engine.Acquire(ctx, r)
	if err == nil && g.Acquired && r.Waiter != "" && e.once.CompareAndSwap(false, true) {
		close(e.held)
		<-e.gate
	}
	return g, err
}
