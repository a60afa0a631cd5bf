package quorum_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// memNode is an embedded engine as a quorum node that can be taken down:
// its shared-lock grants and fence raises then fail.
type memNode struct {
	*memory.Engine
	down atomic.Bool
}

var errNodeDown = errors.New("node down")

func (n *memNode) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if n.down.Load() {
		return engine.Grant{}, errNodeDown
	}
	return n.Engine.Acquire(ctx, r)
}

func (n *memNode) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	if n.down.Load() {
		return false, errNodeDown
	}
	return n.Engine.RaiseFence(ctx, r)
}

// memQuorum composes nodes into a quorum (closed when the test ends; the
// nodes are not: several quorums share them, as processes share servers).
func memQuorum(t testing.TB, nodes []*memNode, opts ...quorum.Option) *quorum.Engine {
	t.Helper()
	engines := make([]engine.Engine, len(nodes))
	for i, n := range nodes {
		engines[i] = struct {
			*memNode
			noClose
		}{n, noClose{}}
	}
	q, err := quorum.New(engines, withTestTimeout(opts)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// noClose keeps a shared node open when one quorum on it closes.
type noClose struct{}

func (noClose) Close() error { return nil }

func newMemNodes(t testing.TB, n int) []*memNode {
	nodes := make([]*memNode, n)
	for i := range nodes {
		nodes[i] = &memNode{Engine: memory.New()}
		t.Cleanup(func() { _ = nodes[i].Engine.Close() })
	}
	return nodes
}

// TestConformanceEmbeddedNodes: the conformance suite on a quorum of three
// embedded engines (the reader-writer lock tests run; the semaphore tests
// with a limit above 1 skip, as the quorum refuses them).
func TestConformanceEmbeddedNodes(t *testing.T) {
	nodes := newMemNodes(t, 3)
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			return memQuorum(t, nodes)
		},
		Votes:           true,
		UncheckedTokens: true,
		MajorityValues:  true,
	})
}

// TestSemaphoreLimitRefused: a semaphore with a limit above 1 is refused
// with errors.ErrUnsupported (an *distlock.UnsupportedError from a
// Client, which matches ErrSemaphoreLimit too), and changes nothing on the nodes; a limit of 1 excludes.
func TestSemaphoreLimitRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := newMemNodes(t, 5)
	q := memQuorum(t, nodes)
	c := distlock.New(q)
	defer c.Close()
	_, err := c.Semaphore("s", 2).TryAcquire(ctx)
	var ue *distlock.UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, quorum.ErrSemaphoreLimit) {
		t.Fatalf("limit 2: %v, want an *UnsupportedError matching ErrSemaphoreLimit", err)
	}
	if err := c.Semaphore("s", 1).SetLimit(ctx, 2); !errors.As(err, &ue) || !errors.Is(err, quorum.ErrSemaphoreLimit) {
		t.Fatalf("a Client's SetLimit 2: %v, want an *UnsupportedError matching ErrSemaphoreLimit", err)
	}
	if _, err := q.Acquire(ctx, engine.AcquireRequest{Name: "s", Owner: "o", TTL: time.Second, Kind: engine.Semaphore, Limit: 3, Weight: 1}); !errors.Is(err, quorum.ErrSemaphoreLimit) {
		t.Fatalf("limit 3: %v, want ErrSemaphoreLimit", err)
	}
	if _, err := q.SetLimit(ctx, "s", 2); !errors.Is(err, quorum.ErrSemaphoreLimit) {
		t.Fatalf("SetLimit 2: %v, want ErrSemaphoreLimit", err)
	}
	for i, n := range nodes {
		if info, _ := n.Inspect(ctx, "s"); info.Kind != 0 {
			t.Fatalf("node %d keeps a semaphore after the refusals: %+v", i, info)
		}
	}
	one := c.Semaphore("one", 1)
	l, err := one.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := distlock.New(memQuorum(t, nodes)).Semaphore("one", 1).TryAcquire(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("a second permit of a limit-1 semaphore: %v", err)
	}
	info, err := one.Inspect(ctx)
	if err != nil || info.Kind != engine.Semaphore || info.Limit != 1 || len(info.Holders) != 1 || info.Holders[0].Token != l.Token() {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if err := one.SetLimit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
}

// TestRWFencingAcrossMajorities: a writer granted on a majority that
// misses the node that minted an earlier reader's token still gets a
// higher token, because phase 2 raised the reader's token on a majority;
// without fencing it does not (the negative control).
func TestRWFencingAcrossMajorities(t *testing.T) {
	for _, fencing := range []bool{true, false} {
		name := map[bool]string{true: "fencing", false: "WithoutFencing"}[fencing]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			nodes := newMemNodes(t, 3)
			var opts []quorum.Option
			if !fencing {
				opts = append(opts, quorum.WithoutFencing())
			}
			q := memQuorum(t, nodes, opts...)
			// Node 0's counter runs far ahead of the others', and node 2's
			// ahead of node 1's (so that nodes 1 and 2 do not agree on the
			// token the quorum proposes, a majority's token that would win
			// over node 0's: the reader's token is node 0's alone).
			high := uint64(time.Now().Add(24 * time.Hour).UnixMicro()) // within engine.MaxRaiseAhead
			mid := uint64(time.Now().Add(12 * time.Hour).UnixMicro())
			for i, hw := range map[int]uint64{0: high, 2: mid} {
				if g, err := nodes[i].Acquire(ctx, engine.AcquireRequest{Name: "rw", Owner: "x", Attempt: "x", TTL: time.Minute}); err != nil || !g.Acquired {
					t.Fatal(g, err)
				}
				if ok, err := nodes[i].RaiseFence(ctx, engine.RaiseRequest{Name: "rw", Owner: "x", Token: hw}); !ok || err != nil {
					t.Fatal(ok, err)
				}
				if _, err := nodes[i].Release(ctx, engine.ReleaseRequest{Name: "rw", Owner: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			c := distlock.New(q)
			defer c.Close()
			// An explicit owner's grant waits for every node (a one-off
			// owner's returns once decided, maybe before node 0 answers).
			r, err := c.RWMutex("rw").RLock(ctx, distlock.WithOwner("reader"))
			if err != nil {
				t.Fatal(err)
			}
			if r.Token() <= high {
				t.Fatalf("reader token %d: node 0's is above %d", r.Token(), high)
			}
			if err := r.Release(ctx); err != nil {
				t.Fatal(err)
			}
			nodes[0].down.Store(true) // the writer's majority is {1, 2}
			w, err := c.RWMutex("rw").Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Release(ctx)
			if fencing && w.Token() <= r.Token() {
				t.Fatalf("writer token %d not above the earlier reader's %d", w.Token(), r.Token())
			}
			if !fencing && w.Token() > r.Token() {
				t.Fatalf("without fencing the writer's token %d is above the reader's %d: the control shows nothing", w.Token(), r.Token())
			}
		})
	}
}

// TestRWWriterExcludesAcrossMajorities: while a writer holds a majority,
// no reader or writer is granted, even with a node of the writer's
// majority down; readers share.
func TestRWWriterExcludesAcrossMajorities(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := newMemNodes(t, 5)
	c1, c2 := distlock.New(memQuorum(t, nodes)), distlock.New(memQuorum(t, nodes))
	defer c1.Close()
	defer c2.Close()
	w, err := c1.RWMutex("rw").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes[0].down.Store(true)
	nodes[1].down.Store(true)
	if _, err := c2.RWMutex("rw").TryRLock(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("a reader while the writer holds: %v", err)
	}
	if _, err := c2.RWMutex("rw").TryLock(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("a second writer: %v", err)
	}
	nodes[0].down.Store(false)
	nodes[1].down.Store(false)
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r1, err := c1.RWMutex("rw").TryRLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c2.RWMutex("rw").TryRLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c1.RWMutex("rw").Inspect(ctx)
	if err != nil || len(info.Holders) != 2 || info.Kind != engine.RWLock {
		t.Fatalf("Inspect with two readers: %+v, %v", info, err)
	}
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
}
