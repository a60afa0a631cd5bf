package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestAcquireAllStalledServer: Redis stalls (SIGSTOP) while a set's one
// script is on its way. The caller's wait ends first; the script runs when
// the server comes back. Whatever order the server then runs the script
// and the Client's clean-up in, the set's names end up free, with nobody
// queued, long before the set's ttl would free them: a set that timed out
// holds nothing, and its error is the *WaitError of a wait that ended.
func TestAcquireAllStalledServer(t *testing.T) {
	srv := redistest.Start(t)
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	watch := distlock.New(eng)
	defer watch.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := range 3 {
		names := []string{fmt.Sprintf("stall-%d/a", round), fmt.Sprintf("stall-%d/b", round), fmt.Sprintf("stall-%d/c", round)}
		// A connection is open and warm, so the script is written to it
		// (a new one would wait for its handshake instead).
		if err := c.DoAll(ctx, []string{"warm/a", "warm/b"}, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := c.AcquireAll(wctx, names, distlock.WithTTL(time.Minute))
		stop()
		if err := srv.Resume(); err != nil {
			t.Fatal(err)
		}
		var we *distlock.WaitError
		if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
			// The wait ended during its one-step attempt: a *WaitError,
			// as a wait that ends waiting (it was a plain wrap).
			t.Fatalf("AcquireAll on a stopped server: %v, want a *WaitError matching the deadline", err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := enginetest.SetFree(ctx, watch, names...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: 20 s after the timed-out set (ttl 1 min): %v", round, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestAcquireAllQuorumNodeStalled: Clients whose sets form a ring in
// opposite orders take them on a Redlock quorum of three while one node is
// stopped (SIGSTOP) and then continued: every set is taken, none twice at
// once (SetCycles), the stalled node costing only its per-node timeout.
func TestAcquireAllQuorumNodeStalled(t *testing.T) {
	servers := redistest.StartN(t, 3)
	nodes := make([]engine.Engine, 3)
	for i, s := range servers {
		e, err := redisengine.New(s.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		nodes[i] = e
	}
	q, err := quorum.New(nodes, quorum.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	clients := make([]*distlock.Client, 4)
	for i := range clients {
		clients[i] = distlock.New(q)
		defer clients[i].Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		enginetest.SetCycles(t, ctx, clients, "stalled-node/", 20, distlock.WithTTL(10*time.Second))
	}()
	if err := servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	if err := servers[0].Resume(); err != nil {
		t.Fatal(err)
	}
	<-done
}
