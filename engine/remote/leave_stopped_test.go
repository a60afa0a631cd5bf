package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/waiting"
)

// TestStrangerWaitEndsOnStoppedServer: a waiter queued through a server
// that is then stopped (SIGSTOP) gives up (its context cancelled): Acquire
// returns within the wait's leave of the queue (waiting.LeaveTimeout), as
// on an engine used directly. Before, the leave got the settle grace that
// requests changing state get after their context ends (1 s), and the
// wait overran its context by 1.5 s (an outside tester's finding).
func TestStrangerWaitEndsOnStoppedServer(t *testing.T) {
	srvs, _, _ := procServers(t, 1)
	s := srvs[0]
	holder, waiter := strangerClient(t, s.URL()), strangerClient(t, s.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := holder.Acquire(ctx, "w", distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	ended := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(wctx, "w", distlock.WithTTL(30*time.Second))
		ended <- err
	}()
	enginetest.WaitFor(t, 20*time.Second, "the waiter to queue", func() bool {
		info, err := holder.Inspect(ctx, "w")
		return err == nil && info.Waiters == 1
	})
	probe := enginetest.StartProbe(t)
	cont := s.pause()
	stopped := time.Now()
	giveUp()
	var werr error
	select {
	case werr = <-ended:
	case <-time.After(20 * time.Second):
		cont()
		t.Fatal("the wait did not end 20 s after its context on a stopped server")
	}
	took := time.Since(stopped)
	cont()
	if !errors.Is(werr, context.Canceled) {
		t.Fatalf("Acquire: %v, want the context's error", werr)
	}
	enginetest.Bounded(t, "the wait's return after its context ended", took, waiting.LeaveTimeout+probe.Slack(), probe.Delay(), time.Second)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
