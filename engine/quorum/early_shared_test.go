package quorum_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestPausedNodeCostsNothingShared: with one of three nodes SIGSTOPped, a
// shared lock's acquire and release (a reader's, a writer's, a semaphore
// of 1's permit) return once decided, as the mutex's do
// (TestPausedNodeCostsNothing): no call waits for the stopped node's
// per-node timeout, which is long (10s), far beyond what a healthy node
// of a busy machine takes to answer. After SIGCONT every kind is granted
// again on the name: the stopped node's late answers left nothing held.
func TestPausedNodeCostsNothingShared(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	const nodeTimeout = testNodeTimeout
	c := newClient(t, srvs)
	ctx := context.Background()
	kinds := map[string]func() (*distlock.Lease, error){
		"reader": func() (*distlock.Lease, error) {
			return c.RWMutex("paused-rw").TryRLock(ctx, distlock.WithTTL(time.Minute))
		},
		"writer": func() (*distlock.Lease, error) {
			return c.RWMutex("paused-rw").TryLock(ctx, distlock.WithTTL(time.Minute))
		},
		"semaphore(1)": func() (*distlock.Lease, error) {
			return c.Semaphore("paused-sem", 1).TryAcquire(ctx, distlock.WithTTL(time.Minute))
		},
	}
	order := []string{"reader", "writer", "semaphore(1)"}
	for _, kind := range order { // warm the connections
		if l, err := kinds[kind](); err == nil {
			_ = l.Release(ctx)
		}
	}
	if err := srvs[2].Pause(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range order {
		var acquires, releases []time.Duration
		for range 11 {
			start := time.Now()
			l, err := kinds[kind]()
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			acquired := time.Now()
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: release: %v", kind, err)
			}
			acquires = append(acquires, acquired.Sub(start))
			releases = append(releases, time.Since(acquired))
		}
		slices.Sort(acquires)
		slices.Sort(releases)
		if slowest := acquires[len(acquires)-1]; slowest >= nodeTimeout {
			t.Fatalf("a %s's acquire took %v with a paused node: it waited for the per-node timeout %v", kind, slowest, nodeTimeout)
		}
		if slowest := releases[len(releases)-1]; slowest >= nodeTimeout {
			t.Fatalf("a %s's release took %v with a paused node: it waited for the per-node timeout %v", kind, slowest, nodeTimeout)
		}
		t.Logf("medians of a %s with a paused node: acquire %v, release %v", kind, acquires[len(acquires)/2], releases[len(releases)/2])
	}
	if err := srvs[2].Resume(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range order {
		l, err := kinds[kind]()
		if err != nil {
			t.Fatalf("%s after SIGCONT: %v", kind, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s after SIGCONT: release: %v", kind, err)
		}
	}
}

// sharedQueuedAcquire is queuedAcquire for shared locks: it also forwards
// engine.Sharer, which a quorum needs of every node for them.
type sharedQueuedAcquire struct{ queuedAcquire }

// SetLimit forwards engine.Sharer to the node.
func (s sharedQueuedAcquire) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	return s.Engine.(engine.Sharer).SetLimit(ctx, name, limit)
}

// holders returns the number of holders srv records of the shared lock
// name, as that node's engine reads it.
func holders(t *testing.T, srv *redistest.Server, name string) int {
	t.Helper()
	e, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	info, err := e.Inspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return len(info.Holders)
}

// TestSharedReleaseBeforeLateGrant: a shared hold (a semaphore of 1's
// permit, a reader's) acquired while one node's grant is still on its way,
// and released before that grant lands: Acquire and Release return once
// decided (the slow node's grant is held back until then), and the late
// grant does not stay on the slow node once it lands: it is released
// there long before its ttl (as TestReleaseBeforeLateGrant shows for the
// mutex).
func TestSharedReleaseBeforeLateGrant(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	gates := make(chan gate, 4)
	q := slowQuorum(t, srvs, time.Second, func(e engine.Engine) engine.Engine {
		return sharedQueuedAcquire{queuedAcquire{e, gates}}
	})
	ctx := context.Background()
	var shut []gate // the gates not opened yet, opened when the test ends
	t.Cleanup(func() {
		for _, g := range shut {
			close(g.open) // a failed round's gated grant goes on, so Close does not wait for it forever
		}
	})
	reqs := []engine.AcquireRequest{
		{Name: "overtaken-sem", Kind: engine.Semaphore, Limit: 1, Weight: 1},
		{Name: "overtaken-rw", Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1},
	}
	for i := range 4 {
		r := reqs[i%len(reqs)]
		gt := newGate()
		gates <- gt
		shut = append(shut, gt)
		r.Owner = "o" + string(rune('a'+i))
		r.Attempt, r.OneOff, r.TTL = r.Owner, true, 30*time.Second
		g, err := q.Acquire(ctx, r)
		if err != nil || !g.Acquired {
			t.Fatalf("round %d: acquire: %+v, %v", i, g, err)
		}
		if rr, err := q.Release(ctx, engine.ReleaseRequest{Name: r.Name, Owner: r.Owner, Kind: r.Kind}); err != nil || rr.Status != engine.Released {
			t.Fatalf("round %d: release: %+v, %v", i, rr, err)
		}
		slow := srvs[2]
		if n := holders(t, slow, r.Name); n != 0 {
			t.Fatalf("round %d: %d holders on the slow node before its gate opened", i, n)
		}
		shut = shut[:len(shut)-1]
		close(gt.open) // the grant lands now, after Release returned
		<-gt.landed
		if !eventually(10*time.Second, func() bool { return holders(t, slow, r.Name) == 0 }) {
			t.Fatalf("round %d: the late grant is still on the slow node 10s after its answer; ttl 30s", i)
		}
	}
}
