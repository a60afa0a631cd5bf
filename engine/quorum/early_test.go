package quorum_test

import (
	"context"
	"slices"
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

// slowAcquire holds a node's acquires back until gate closes, as a slow
// network or a busy node would; an acquire whose context ends first fails
// (and is counted in timedOut).
type slowAcquire struct {
	engine.Engine
	gate     <-chan struct{}
	timedOut *atomic.Int64
}

func (s slowAcquire) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	select {
	case <-s.gate:
	case <-ctx.Done():
		s.timedOut.Add(1)
		return engine.Grant{}, ctx.Err()
	}
	return s.Engine.Acquire(ctx, r)
}

// RaiseFence forwards phase 2 (engine.FenceRaiser) to the node.
func (s slowAcquire) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return s.Engine.(engine.FenceRaiser).RaiseFence(ctx, r)
}

// queuedAcquire holds a node's acquires back until its gate for them
// opens, and then applies them whatever became of the caller: a command
// queued behind a stall, which lands after the caller's per-node timeout.
// The gate of the n-th acquire is the n-th a test sends on gates.
type queuedAcquire struct {
	engine.Engine
	gates <-chan gate
}

// gate holds one acquire back until open is closed; landed is closed once
// the node answered it (the grant is on the node, or refused there).
type gate struct{ open, landed chan struct{} }

func newGate() gate { return gate{make(chan struct{}), make(chan struct{})} }

func (s queuedAcquire) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g := <-s.gates
	defer close(g.landed)
	<-g.open
	return s.Engine.Acquire(context.WithoutCancel(ctx), r)
}

// RaiseFence forwards phase 2 (engine.FenceRaiser) to the node.
func (s queuedAcquire) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return s.Engine.(engine.FenceRaiser).RaiseFence(ctx, r)
}

// slowQuorum is a quorum over srvs whose last node's engine is made by
// wrap, with per-node timeout nodeTimeout.
func slowQuorum(t *testing.T, srvs []*redistest.Server, nodeTimeout time.Duration, wrap func(engine.Engine) engine.Engine) *quorum.Engine {
	t.Helper()
	return wrappedQuorum(t, srvs, func(i int, e engine.Engine) engine.Engine {
		if i == len(srvs)-1 {
			return wrap(e)
		}
		return e
	}, quorum.WithNodeTimeout(nodeTimeout))
}

// lockToken returns the token recorded on srv for name ("" when not held),
// as that node's engine reads it.
func lockToken(t *testing.T, srv *redistest.Server, name string) string {
	t.Helper()
	e, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	info, err := e.Inspect(context.Background(), name)
	if err != nil || !info.Held {
		return ""
	}
	return strconv.FormatUint(info.Token, 10)
}

// eventually polls cond every millisecond for up to d (a limit for a
// machine far slower than needed, not a speed).
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestLateGrantIsKept: a grant returns as soon as a majority granted; the
// slow node's grant that lands afterwards stays, carrying the lease's token
// or the one it minted when that is higher (a raise never lowers a token),
// and is renewed and released with the lease.
func TestLateGrantIsKept(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	gate := make(chan struct{})
	var timedOut atomic.Int64
	c := distlock.New(slowQuorum(t, srvs, testNodeTimeout, func(e engine.Engine) engine.Engine { return slowAcquire{e, gate, &timedOut} }))
	defer c.Close()
	ctx := context.Background()
	// The slow node's grant is held back until the acquire returned: an
	// acquire that waited for it would fail it at the per-node timeout.
	l, err := c.Acquire(ctx, "late", distlock.WithTTL(3*time.Second))
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	if timedOut.Load() != 0 {
		t.Fatal("the acquire waited for the slow node until its per-node timeout")
	}
	slow := srvs[2]
	want := lockToken(t, srvs[0], "late")
	atLeast := func(tok string) bool {
		got, err1 := strconv.ParseUint(tok, 10, 64)
		lease, err2 := strconv.ParseUint(want, 10, 64)
		return err1 == nil && err2 == nil && got >= lease
	}
	if !eventually(10*time.Second, func() bool { return atLeast(lockToken(t, slow, "late")) }) {
		t.Fatalf("slow node: token %q, want the lease's %q or above", lockToken(t, slow, "late"), want)
	}
	if got := l.Token(); strconv.FormatUint(got, 10) != want {
		t.Fatalf("lease token %d, want the majority's %s", got, want)
	}
	if got := want; got == "" || got != lockToken(t, srvs[1], "late") {
		t.Fatalf("tokens on the fast nodes differ: %q, %q", got, lockToken(t, srvs[1], "late"))
	}
	// Renewed with the lease: the time left on the slow node goes up
	// again (without renewals it only goes down).
	landed := slow.Client().PTTL(ctx, lockKey("late")).Val()
	if !eventually(10*time.Second, func() bool { return slow.Client().PTTL(ctx, lockKey("late")).Val() > landed }) {
		t.Fatalf("the late grant was not renewed with the lease: pttl %v", slow.Client().PTTL(ctx, lockKey("late")).Val())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		if !eventually(10*time.Second, func() bool { return s.Client().Exists(ctx, lockKey("late")).Val() == 0 }) {
			t.Fatalf("node %d still holds the lock after release", i)
		}
	}
}

// TestReleaseBeforeLateGrant: a lease released while one node's grant is
// still on its way (for longer than the release's per-node timeout): the
// grant lands after the release gave up on that node, and is released once
// its answer comes, long before its ttl.
func TestReleaseBeforeLateGrant(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	gates := make(chan gate, 5)
	// The per-node timeout is what the release gives up after (the test
	// is about it); long enough for the healthy nodes of a busy machine.
	q := slowQuorum(t, srvs, time.Second, func(e engine.Engine) engine.Engine {
		return queuedAcquire{e, gates}
	})
	ctx := context.Background()
	var shut []gate // the gates not opened yet, opened when the test ends
	t.Cleanup(func() {
		for _, g := range shut {
			close(g.open) // a failed round's gated grant goes on, so Close does not wait for it forever
		}
	})
	for i := range 5 {
		gt := newGate()
		gates <- gt
		shut = append(shut, gt)
		owner := "o" + string(rune('a'+i))
		g, err := q.Acquire(ctx, engine.AcquireRequest{Name: "overtaken", Owner: owner, Attempt: owner, OneOff: true, TTL: 30 * time.Second})
		if err != nil || !g.Acquired {
			t.Fatalf("acquire: %+v, %v", g, err)
		}
		if r, err := q.Release(ctx, engine.ReleaseRequest{Name: "overtaken", Owner: owner}); err != nil || r.Status != engine.Released {
			t.Fatalf("release: %+v, %v", r, err)
		}
		slow := srvs[2]
		if slow.Client().Exists(ctx, lockKey("overtaken")).Val() != 0 {
			t.Fatalf("round %d: the name is held on the slow node before its gate opened (token %q)", i, lockToken(t, slow, "overtaken"))
		}
		shut = shut[:len(shut)-1]
		close(gt.open) // the grant lands now, after the release gave up on the node
		// Judge the clean-up only once the grant has landed: before that,
		// a free key proves nothing (and the grant would land in the next
		// round, before that round's check).
		<-gt.landed
		if !eventually(10*time.Second, func() bool { return slow.Client().Exists(ctx, lockKey("overtaken")).Val() == 0 }) {
			t.Fatalf("round %d: the late grant is still on the slow node 10s after its answer; ttl 30s", i)
		}
	}
}

// TestPausedNodeCostsNothing: with one of five nodes SIGSTOPped, acquire,
// extend and release do not wait for the stopped node's per-node timeout:
// every call returns before it. The timeout is long (10s), far beyond what
// a healthy node of a busy machine takes to answer: only waiting for the
// stopped node could bring a call to it.
func TestPausedNodeCostsNothing(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	const nodeTimeout = testNodeTimeout
	c := newClient(t, srvs)
	ctx := context.Background()
	if l, err := c.Acquire(ctx, "paused"); err == nil {
		_ = l.Release(ctx) // warm the connections
	}
	if err := srvs[4].Pause(); err != nil {
		t.Fatal(err)
	}
	defer srvs[4].Resume()
	var took, extends []time.Duration
	for range 21 {
		start := time.Now()
		l, err := c.TryAcquire(ctx, "paused", distlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	l, err := c.TryAcquire(ctx, "paused", distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	for range 21 {
		start := time.Now()
		if err := l.Extend(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		extends = append(extends, time.Since(start))
	}
	slices.Sort(took)
	slices.Sort(extends)
	if slowest := took[len(took)-1]; slowest >= nodeTimeout {
		t.Fatalf("an acquire+release took %v with a paused node: it waited for the per-node timeout %v", slowest, nodeTimeout)
	}
	if slowest := extends[len(extends)-1]; slowest >= nodeTimeout {
		t.Fatalf("an extend took %v with a paused node: it waited for the per-node timeout %v", slowest, nodeTimeout)
	}
	t.Logf("medians with a paused node: acquire+release %v, extend %v", took[len(took)/2], extends[len(extends)/2])
}

// TestNextAcquireSeesOwnRelease: release returns once a majority answered,
// yet this engine's next acquire of the name never finds the released lock
// still held on a straggler: it reaches each node after that node's release
// (and a release reaches a node after the grant's late answer). Without
// that ordering, acquire-release loops fail within a few dozen rounds.
func TestNextAcquireSeesOwnRelease(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	c := newClient(t, srvs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 500 {
		// A context cancelled as soon as the call returns must not cut
		// the stragglers short either.
		actx, acancel := context.WithCancel(ctx)
		l, err := c.TryAcquire(actx, "loop", distlock.WithTTL(10*time.Second))
		acancel()
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		rctx, rcancel := context.WithCancel(ctx)
		err = l.Release(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("round %d: release: %v", i, err)
		}
	}
}
