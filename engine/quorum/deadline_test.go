package quorum_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/internal/redistest"
)

// deadlineNodeTimeout is the per-node timeout of TestWaitDeadlineMajorityStopped.
const deadlineNodeTimeout = 200 * time.Millisecond

// leaveQueue is what README's wait-deadline promise allows past the
// round trip's cancellation: leaving the queue.
const leaveQueue = 500 * time.Millisecond

// TestWaitDeadlineMajorityStopped: with a majority of the nodes SIGSTOPped,
// every waiting call of one Client (several in a row, of every waiting
// kind) returns within its context's deadline plus a round trip's
// cancellation (the per-node timeout) and leaving the queue, as README
// promises: never after the Redis client's redial of a stopped node's
// pub/sub connection, which ignores contexts.
func TestWaitDeadlineMajorityStopped(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	q := newQuorum(t, srvs, quorum.WithNodeTimeout(deadlineNodeTimeout))
	c := distlock.New(q)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if _, err := c.Inspect(ctx, "deadline-warm"); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs[:2] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	// (The harness's clean-up kills a server left paused.)
	probe := enginetest.StartProbe(t)
	const budget = 300 * time.Millisecond
	waits := map[string]func(ctx context.Context, name string) error{
		"Acquire": func(ctx context.Context, name string) error {
			_, err := c.Acquire(ctx, name, distlock.WithTTL(5*time.Second))
			return err
		},
		"RLock": func(ctx context.Context, name string) error {
			_, err := c.RWMutex(name).RLock(ctx, distlock.WithTTL(5*time.Second))
			return err
		},
		"Lock": func(ctx context.Context, name string) error {
			_, err := c.RWMutex(name).Lock(ctx, distlock.WithTTL(5*time.Second))
			return err
		},
		"Semaphore(1)": func(ctx context.Context, name string) error {
			_, err := c.Semaphore(name, 1).Acquire(ctx, distlock.WithTTL(5*time.Second))
			return err
		},
		"Campaign": func(ctx context.Context, name string) error {
			_, err := c.Campaign(ctx, name, "v", distlock.WithTTL(5*time.Second))
			return err
		},
		"AcquireAll": func(ctx context.Context, name string) error {
			_, err := c.AcquireAll(ctx, []string{name + "-a", name + "-b"}, distlock.WithTTL(5*time.Second))
			return err
		},
	}
	for _, kind := range []string{"Acquire", "RLock", "Lock", "Semaphore(1)", "Campaign", "AcquireAll"} {
		for i := range 3 {
			what := fmt.Sprintf("%s %d", kind, i)
			cctx, cancel := context.WithTimeout(ctx, budget)
			start := time.Now()
			err := waits[kind](cctx, fmt.Sprintf("deadline-%s-%d", kind, i))
			took := time.Since(start)
			cancel()
			if err == nil {
				t.Fatalf("%s: granted with a majority stopped", what)
			}
			enginetest.Bounded(t, what+" with a majority stopped", took,
				budget+deadlineNodeTimeout+leaveQueue+probe.Slack(), probe.Delay(), time.Second)
		}
	}
}
