package distlock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// attemptLog is the memory engine with the waiter id of every Acquire
// recorded ("" for an attempt outside the queue).
type attemptLog struct {
	*memory.Engine
	mu      sync.Mutex
	waiters []string
}

func (e *attemptLog) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	e.mu.Lock()
	e.waiters = append(e.waiters, r.Waiter)
	e.mu.Unlock()
	return e.Engine.Acquire(ctx, r)
}

// since returns the waiter ids of the attempts after the first n.
func (e *attemptLog) since(n int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.waiters[n:]...)
}

func (e *attemptLog) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.waiters)
}

// TestRecentWaitSkipsFirstAttempt: a waiting Acquire of a name the Client
// waited for within the last second starts in the wait loop (its first
// attempt carries its queue entry: it queues when refused), not with a
// plain attempt that is refused first; a second later, and for other
// names, the plain attempt comes first again. Either way the call waits
// its turn and is granted when the holder releases.
func TestRecentWaitSkipsFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		log := &attemptLog{Engine: mem}
		c := distlock.New(log)
		defer c.Close()
		holder := distlock.New(mem)
		defer holder.Close()
		ctx := context.Background()

		// contended has the holder take name, c wait for it, the holder
		// release; it returns the waiter ids of c's attempts.
		contended := func(name string) []string {
			t.Helper()
			h, err := holder.Acquire(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			mark := log.count()
			done := make(chan error, 1)
			go func() {
				l, err := c.Acquire(ctx, name)
				if err == nil {
					err = l.Release(ctx)
				}
				done <- err
			}()
			synctest.Wait() // c is asleep in its wait
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			return log.since(mark)
		}
		if w := contended("n"); len(w) < 2 || w[0] != "" || w[1] == "" {
			t.Fatalf("first wait: attempts %q, want a plain one, then queued ones", w)
		}
		if w := contended("n"); len(w) < 1 || w[0] == "" {
			t.Fatalf("a wait right after a wait: attempts %q, want the first one queued", w)
		}
		if w := contended("other"); len(w) < 2 || w[0] != "" {
			t.Fatalf("another name: attempts %q, want a plain one first", w)
		}
		time.Sleep(2 * time.Second) // past the window (the bubble's clock)
		if w := contended("n"); len(w) < 2 || w[0] != "" {
			t.Fatalf("a wait 2s after the last: attempts %q, want a plain one first", w)
		}
	})
}
