package quorum_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// lostReleaseAnswer is an embedded node that applies its first release
// but loses the answer (the caller sees an error), then fails every
// release while it is down, as a node unreachable for a while.
type lostReleaseAnswer struct {
	*memory.Engine

	mu       sync.Mutex
	calls    int
	down     bool
	failures int
}

// Close leaves the node open: the test closes it.
func (n *lostReleaseAnswer) Close() error { return nil }

func (n *lostReleaseAnswer) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	n.mu.Lock()
	n.calls++
	first, down := n.calls == 1, n.down && n.calls > 1
	if down {
		n.failures++
	}
	n.mu.Unlock()
	switch {
	case first:
		if _, err := n.Engine.ReleaseOnce(ctx, r, id); err != nil {
			return engine.ReleaseResult{}, err
		}
		return engine.ReleaseResult{}, errors.New("the release's answer was lost")
	case down:
		return engine.ReleaseResult{}, errors.New("node unreachable")
	}
	return n.Engine.ReleaseOnce(ctx, r, id)
}

func (n *lostReleaseAnswer) failed() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failures
}

func (n *lostReleaseAnswer) up() {
	n.mu.Lock()
	n.down = false
	n.mu.Unlock()
}

// TestReacquireBeforeReleaseRetried: an explicit owner releases; node 2
// applies the release but its answer is lost, so the release is retried
// there in the background (with the same release id) while node 2 stays
// unreachable, backing off longer each time. The owner acquires again as
// soon as node 2 is back, before the next retry. The retry must not drop
// the new grant on node 2: node 2 forgot the release id with the hold it
// freed, so a retry arriving after the grant would take that hold instead,
// leaving the lease on one node fewer than it was granted by (one more
// node's fault from losing its majority).
//
// It failed before the fix (an acquire of an explicit owner sends the
// release still pending for it on a node before its grant, cleaner.flush):
// "node 2 after the retried release: {Held:false ...}".
func TestReacquireBeforeReleaseRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mems := threeMems(t)
	flaky := &lostReleaseAnswer{Engine: mems[2], down: true}
	// Every node answers in time however busy the machine: a node's
	// failure here is the test's own doing.
	q, err := quorum.New([]engine.Engine{mems[0], mems[1], flaky}, quorum.WithNodeTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(q)
	defer c.Close()
	own := []distlock.Option{distlock.WithOwner("worker-7"), distlock.WithTTL(time.Minute)}

	l, err := c.TryAcquire(ctx, "again", own...)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release with a majority answering: %v", err)
	}
	enginetest.WaitFor(t, 20*time.Second, "the background retries on node 2 to back off", func() bool {
		return flaky.failed() >= 12 // the next retry is at least 240 ms away
	})
	flaky.up()
	again, err := c.TryAcquire(ctx, "again", own...)
	if err != nil {
		t.Fatalf("acquire again: %v", err)
	}
	defer again.Release(ctx)
	enginetest.WaitFor(t, 20*time.Second, "the background releases to end", func() bool {
		return quorum.CleanupsPending(q) == 0
	})
	for i, m := range mems {
		info, err := m.Inspect(ctx, "again")
		if err != nil || !info.Held || info.Owner != "worker-7" || info.Count != 1 {
			t.Fatalf("node %d after the retried release: %+v, %v; want the new grant, held once by worker-7", i, info, err)
		}
	}
}
