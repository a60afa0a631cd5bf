package quorum_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// countingRaises wraps a node and counts its phase-2 calls once answered.
type countingRaises struct {
	engine.Engine
	n *atomic.Int64
}

func (c countingRaises) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	defer c.n.Add(1)
	return c.Engine.(engine.FenceRaiser).RaiseFence(ctx, r)
}

// grantAndRelease acquires name for owner on q and releases it, waiting
// until the lock is gone from every server in srvs (a release returns once a
// majority answered). The owner is explicit (its attempt id is not the
// owner), so the acquire waits for every node's answer: the tokens each
// node minted are then known when it returns.
func grantAndRelease(t *testing.T, q *quorum.Engine, srvs []*redistest.Server, name, owner string) uint64 {
	t.Helper()
	return grantAndReleaseAfter(t, q, srvs, name, owner, func() {})
}

// grantAndReleaseAfter is grantAndRelease with held run between the grant
// and the release.
func grantAndReleaseAfter(t *testing.T, q *quorum.Engine, srvs []*redistest.Server, name, owner string, held func()) uint64 {
	t.Helper()
	ctx := context.Background()
	g, err := q.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner + "-1", TTL: 10 * time.Second})
	if err != nil || !g.Acquired {
		t.Fatalf("acquire: %+v, %v", g, err)
	}
	held()
	if _, err := q.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range srvs {
		for s.Client().Exists(ctx, lockKey(name)).Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s still held on %s after release", name, s.Addr())
			}
			time.Sleep(time.Millisecond)
		}
	}
	return g.Token
}

// counting builds the nodes without the time floor: they mint high-water +
// 1, so the tokens below come from the high-waters the tests set. (With
// the floor, the default, each node mints from its own clock.)
var counting = []redisengine.Option{redisengine.WithoutTimeFloor()}

// TestPhaseTwoOnlyWhenTokensDisagree: phase 2 runs when the majority's
// phase-1 tokens differ (it is sent to every granting node, and a majority
// is raised to the maximum before the grant returns);
// when a majority granted with the grant's token already, it is skipped,
// and the tokens still strictly increase.
func TestPhaseTwoOnlyWhenTokensDisagree(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	ctx := context.Background()
	var raises atomic.Int64
	q := nodesQuorum(t, srvs, counting, func(_ int, e engine.Engine) engine.Engine { return countingRaises{e, &raises} })
	const name = "phase2"
	fence := lockKey(name) + ":fence"
	setFence := func(i, v int) {
		t.Helper()
		if err := srvs[i].Client().Set(ctx, fence, v, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	step := func(owner string, wantToken uint64, wantRaises int64) {
		t.Helper()
		raises.Store(0)
		// Phase 2 is sent to every granting node, and the grant returns
		// once a majority confirmed: the third call may still be out. The
		// lock is held until every call answered, so that none is refused
		// by this step's own release (the node would then keep a lower
		// high-water, which would change the next step's tokens) and none
		// is counted in the next step.
		got := grantAndReleaseAfter(t, q, srvs, name, owner, func() {
			if !eventually(10*time.Second, func() bool { return raises.Load() >= wantRaises }) {
				t.Fatalf("%s: %d phase-2 calls answered, want %d", owner, raises.Load(), wantRaises)
			}
		})
		if got != wantToken {
			t.Fatalf("%s: token %d, want %d", owner, got, wantToken)
		}
		if raises.Load() != wantRaises {
			t.Fatalf("%s: %d phase-2 calls, want %d", owner, raises.Load(), wantRaises)
		}
		// What the grant promises: a majority's high-water is at least the
		// token when it returns (a minority's raise may come after the
		// release and be refused: the next majority intersects this one).
		raised := 0
		for _, s := range srvs {
			if hw, err := s.Client().Get(ctx, fence).Uint64(); err == nil && hw >= wantToken {
				raised++
			}
		}
		if raised < q.Majority() {
			t.Fatalf("%s: %d nodes with high-water >= %d, want a majority (%d)", owner, raised, wantToken, q.Majority())
		}
	}
	for i := range srvs {
		setFence(i, (i+1)*1000)
	}
	step("a", 3001, 3) // 1001, 2001, 3001: phase 2 on all three
	step("b", 3002, 0) // every node mints 3002: nothing to raise
	// A majority agreeing is settled already, even below a minority's
	// token: it is above every earlier settled token (their majorities
	// meet), and no node is raised.
	setFence(2, 9000)  // one node ahead (a re-seed from a clock ahead)
	step("c", 3003, 0) // 3003, 3003, 9001
	step("d", 3004, 0) // 3004, 3004, 9002
	// No majority: the maximum, raised on every granting node.
	setFence(0, 20000)
	step("e", 20001, 3) // 20001, 3005, 9003
	step("f", 20002, 0)
}

// TestTokenOrderSurvivesLosingTheMaxNode: one node's high-water is far
// ahead; the grant's token comes from it; then that node dies. With phase 2
// the survivors were raised to the token and the next grant is above it.
// The control, with phase 2 off, hands out a lower token after the same
// schedule: the order depends on phase 2.
func TestTokenOrderSurvivesLosingTheMaxNode(t *testing.T) {
	run := func(t *testing.T, opts ...quorum.Option) (first, second uint64) {
		srvs := redistest.StartN(t, 3)
		ctx := context.Background()
		for i, s := range srvs {
			v := 1000
			if i == 2 {
				v = 9000
			}
			if err := s.Client().Set(ctx, lockKey("order")+":fence", v, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
		q := nodesQuorum(t, srvs, counting, nil, opts...)
		first = grantAndRelease(t, q, srvs, "order", "a")
		if err := srvs[2].Kill(); err != nil {
			t.Fatal(err)
		}
		return first, grantAndRelease(t, q, srvs[:2], "order", "b")
	}
	first, second := run(t)
	if second <= first {
		t.Fatalf("with phase 2: token %d after %d", second, first)
	}
	t.Run("control: phase 2 off", func(t *testing.T) {
		first, second := run(t, quorum.WithoutFencing())
		if second > first {
			t.Fatalf("without phase 2 the tokens still increased (%d after %d): the test has no teeth", second, first)
		}
	})
}
