package findings

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestQuorumCleanupDropsReentrantHold: on Redlock, releasing one hold of a
// re-entrant lock (WithOwner, two holds) while a majority of the nodes do
// not answer in time must leave the other hold in place. The quorum hands
// the unanswered nodes to its background cleaner, which releases by owner
// "until the node answers, and then once more" (engine/quorum/cleanup.go).
// That is harmless for a random owner, whose grant is gone after one
// release; for an owner with two holds the cleaner's releases, plus the
// original one queued on the stopped node, drop both holds there. The
// outer hold loses its majority while its lease still counts as held, and
// another client is granted the lock.
//
// Found by the safety lab while checking which release paths are
// idempotent (scenario 7, a node paused; the lab's own clients use random
// owners, so its runs cannot show it).
// countedReleases is a Redis node that counts its answered releases (the
// quorum's idempotent ReleaseOnce, or a plain Release). It embeds the
// node's concrete type, so that the quorum sees every capability of the
// node.
type countedReleases struct {
	*redisengine.Engine
	n atomic.Int32
}

func (c *countedReleases) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	res, err := c.Engine.Release(ctx, r)
	if err == nil {
		c.n.Add(1)
	}
	return res, err
}

func (c *countedReleases) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	res, err := c.Engine.ReleaseOnce(ctx, r, id)
	if err == nil {
		c.n.Add(1)
	}
	return res, err
}

func TestQuorumCleanupDropsReentrantHold(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	nodes := make([]engine.Engine, len(srvs))
	counted := make([]*countedReleases, len(srvs))
	for i, s := range srvs {
		e, err := redisengine.New(s.Client())
		if err != nil {
			t.Fatal(err)
		}
		counted[i] = &countedReleases{Engine: e}
		nodes[i] = counted[i]
	}
	q, err := quorum.New(nodes, quorum.WithNodeTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	c := distlock.New(q)
	defer c.Close()
	ctx := context.Background()
	opts := []distlock.Option{distlock.WithOwner("job-7"), distlock.WithTTL(10 * time.Second), distlock.WithAutoRenew(false)}

	outer, err := c.Acquire(ctx, "batch", opts...)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := c.Acquire(ctx, "batch", opts...) // two holds on every node
	if err != nil {
		t.Fatal(err)
	}
	// Two of three nodes stop answering for a moment while the inner hold
	// is released: node 0 confirms, nodes 1 and 2 time out.
	for _, s := range srvs[1:] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("inner release: %v", inner.Release(ctx))
	time.Sleep(300 * time.Millisecond) // the nodes stay stopped a while: the fault
	for _, s := range srvs[1:] {
		if err := s.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	// The cleaner's work is done when it released on each of the stopped
	// nodes twice (until the node answers, and then once more).
	for end := time.Now().Add(time.Minute); counted[1].n.Load() < 2 || counted[2].n.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the cleaner released %d and %d times on the stopped nodes, want 2 each", counted[1].n.Load(), counted[2].n.Load())
		}
	}

	counts := make([]string, len(srvs))
	for i := range srvs {
		info, _ := nodes[i].Inspect(ctx, "batch")
		counts[i] = strconv.Itoa(info.Count)
	}
	other := distlock.New(q)
	defer other.Close()
	l, err := other.TryAcquire(ctx, "batch", distlock.WithTTL(10*time.Second), distlock.WithAutoRenew(false))
	if err == nil {
		defer l.Release(ctx)
	}
	if outer.Err() != nil {
		t.Fatalf("outer lease: %v", outer.Err())
	}
	if !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("outer hold of %q still live, but another client's TryAcquire: %v (want ErrLocked); hold counts per node: %q",
			outer.Owner(), err, counts)
	}
	t.Logf("hold counts per node: %q", counts)
}
