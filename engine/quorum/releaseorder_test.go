package quorum_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// nthReleaseHeld is an embedded node whose n-th release call (counting
// from 1) waits for gate, as a node paused at that moment would; its other
// releases go through at once.
type nthReleaseHeld struct {
	*memory.Engine
	n    int
	gate <-chan struct{}

	mu    sync.Mutex
	calls int
}

// Close leaves the node open: the test closes it.
func (h *nthReleaseHeld) Close() error { return nil }

func (h *nthReleaseHeld) wait(ctx context.Context) error {
	h.mu.Lock()
	h.calls++
	held := h.calls == h.n
	h.mu.Unlock()
	if !held {
		return nil
	}
	return waitGate(ctx, h.gate)
}

func (h *nthReleaseHeld) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := h.wait(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return h.Engine.Release(ctx, r)
}

func (h *nthReleaseHeld) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := h.wait(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return h.Engine.ReleaseOnce(ctx, r, id)
}

// TestReleasesReachEachNodeInOrder: a process's releases of one name reach
// each node in the order it made them. Holds are counted (re-entry of a
// mutex, a reader's count): the first release returns once nodes 0
// and 1 answered, node 2 is paused on it; the second release answers on
// node 0 while node 1 is paused on it. Had the second release overtaken the
// first on node 2, it would return on nodes 0 and 2 with nodes 1 and 2 each
// still counting one hold, and the caller, having released both, would find
// the lock held.
//
// It failed before the fix, as the conformance suite's Reentrancy did once
// on a busy machine: "after both releases: {... Held:true ... Count:1}".
func TestReleasesReachEachNodeInOrder(t *testing.T) {
	kinds := []struct {
		name    string
		acquire func(context.Context, *distlock.Client, string) (*distlock.Lease, error)
		inspect func(context.Context, *distlock.Client, string) (distlock.Info, error)
	}{
		{"mutex",
			func(ctx context.Context, c *distlock.Client, name string) (*distlock.Lease, error) {
				return c.TryAcquire(ctx, name, distlock.WithOwner("worker-7"), distlock.WithTTL(time.Minute))
			},
			func(ctx context.Context, c *distlock.Client, name string) (distlock.Info, error) {
				return c.Inspect(ctx, name)
			}},
		{"reader",
			func(ctx context.Context, c *distlock.Client, name string) (*distlock.Lease, error) {
				return c.RWMutex(name).TryRLock(ctx, distlock.WithOwner("worker-7"), distlock.WithTTL(time.Minute))
			},
			func(ctx context.Context, c *distlock.Client, name string) (distlock.Info, error) {
				return c.RWMutex(name).Inspect(ctx)
			}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			mems := threeMems(t)
			gate1, gate2 := make(chan struct{}), make(chan struct{})
			var open2 sync.Once
			q, err := quorum.New([]engine.Engine{
				mems[0],
				&nthReleaseHeld{Engine: mems[1], n: 2, gate: gate1},
				&nthReleaseHeld{Engine: mems[2], n: 1, gate: gate2},
			}, quorum.WithNodeTimeout(20*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			c := distlock.New(q)
			defer c.Close()
			defer open2.Do(func() { close(gate2) })
			defer close(gate1)
			name := "reentered-" + k.name

			outer, err := k.acquire(ctx, c, name)
			if err != nil {
				t.Fatal(err)
			}
			inner, err := k.acquire(ctx, c, name)
			if err != nil {
				t.Fatalf("re-entry: %v", err)
			}
			if err := inner.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// Node 2 answers the first release once the second release's
			// outcome was inspected, or soon if the second release waits for
			// it (as it must): the pause lasts as long as the mistake needs.
			inspected := make(chan struct{})
			go func() {
				select {
				case <-inspected:
				case <-time.After(200 * time.Millisecond):
				}
				open2.Do(func() { close(gate2) })
			}()
			err = outer.Release(ctx)
			info, ierr := k.inspect(ctx, c, name)
			close(inspected)
			if err != nil || ierr != nil {
				t.Fatalf("release: %v, inspect: %v", err, ierr)
			}
			if info.Held || len(info.Holders) != 0 {
				t.Fatalf("after both releases: %+v, want free", info)
			}
		})
	}
}
