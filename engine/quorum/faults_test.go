package quorum_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/internal/lagprobe"
	"github.com/distlock/distlock/internal/redistest"
)

// TestMinorityDown: with 2 of 5 nodes killed locking works; with 3 of 5 the
// error is "no quorum" (a backend error naming the nodes), never "locked",
// and a waiting Acquire ends with its context (up to an attempt in flight,
// which the per-node timeout bounds, and the scheduling delay measured
// meanwhile).
func TestMinorityDown(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	var nodeErrs atomic.Int64
	// A dead node's calls end at the per-node timeout (a client's dials
	// retry), which bounds an attempt: long enough for a healthy node of
	// a busy machine, short enough for a wait budget of a few attempts.
	const nodeTimeout = 500 * time.Millisecond
	c := newClient(t, srvs, quorum.WithNodeErrors(func(string, error) { nodeErrs.Add(1) }), quorum.WithNodeTimeout(nodeTimeout))
	ctx := context.Background()
	for _, s := range srvs[:2] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Acquire(ctx, "minority", distlock.WithTTL(2*time.Second))
	if err != nil {
		t.Fatalf("2 of 5 down: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srvs[2].Kill(); err != nil {
		t.Fatal(err)
	}
	_, err = c.TryAcquire(ctx, "minority", distlock.WithTTL(2*time.Second))
	if !errors.Is(err, distlock.ErrBackend) || !errors.Is(err, quorum.ErrNoQuorum) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("3 of 5 down: %v, want a no-quorum backend error", err)
	}
	var nq *quorum.NoQuorumError
	if !errors.As(err, &nq) || len(nq.Errs) != 3 {
		t.Fatalf("no per-node errors: %v", err)
	}
	if nodeErrs.Load() < 3 {
		t.Fatalf("node error hook saw %d errors", nodeErrs.Load())
	}
	probe := enginetest.StartProbe(t)
	const budget = 3 * nodeTimeout
	wctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	_, err = c.Acquire(wctx, "minority", distlock.WithTTL(2*time.Second))
	enginetest.Bounded(t, "the waiting Acquire's return after its budget", time.Since(start)-budget, nodeTimeout+probe.Slack(), probe.Delay(), nodeTimeout)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, quorum.ErrNoQuorum) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("waiting with 3 of 5 down: %v", err)
	}
}

// TestPausedNode: a SIGSTOPped node costs at most the per-node timeout (the
// acquire returns before it), and the grant that lands on it after SIGCONT
// is cleaned up well before it could expire by itself.
func TestPausedNode(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	const nodeTimeout = testNodeTimeout
	c := newClient(t, srvs)
	ctx := context.Background()
	// Warm the connections, so the pause hits established ones.
	if l, err := c.Acquire(ctx, "warm"); err == nil {
		_ = l.Release(ctx)
	}
	paused := srvs[4]
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	const ttl = 30 * time.Second
	start := time.Now()
	l, err := c.Acquire(ctx, "paused-node", distlock.WithTTL(ttl))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took >= nodeTimeout {
		t.Fatalf("acquire took %v with one node paused: it waited for the per-node timeout %v", took, nodeTimeout)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	rc := paused.Client()
	deadline := time.Now().Add(ttl / 3) // well before the key could expire by itself
	for {
		n, err := rc.Exists(ctx, lockKey("paused-node")).Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stray key on the resumed node %v after release (exists=%d err=%v)", time.Since(start), n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNodeRestartedEmpty: a node that loses its data between grants does
// not break token order, and with the restart delayed past the ttl a stale
// lock on it cannot let two holders coexist.
func TestNodeRestartedEmpty(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	a, b := newClient(t, srvs), newClient(t, srvs)
	ctx := context.Background()
	var last uint64
	for i := range 30 {
		if i%10 == 5 {
			n := srvs[i%3]
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := n.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		c := a
		if i%2 == 1 {
			c = b
		}
		// A ttl far beyond a grant's time on a busy machine: the
		// validity left after the round trips never runs out.
		l, err := c.Acquire(ctx, "restarts", distlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("grant %d: token %d not above %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A holds; one of its nodes restarts empty after waiting out the ttl
	// (delayed restart). B cannot get a majority while A's lease is valid.
	const ttl = 600 * time.Millisecond
	asked := time.Now()
	la, err := a.Acquire(ctx, "stale", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if err := srvs[0].Kill(); err != nil {
		t.Fatal(err)
	}
	// The restart comes once the grant's ttl has run out on the node (it
	// lost the grant and its renewals with its data).
	time.Sleep(time.Until(asked.Add(ttl)))
	if err := srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	// Judged against A's deadline, not its loss signal (a timer a busy
	// machine may run late): B's answer came before A's deadline, so A
	// held on 2 of 3 nodes when B was answered.
	_, err = b.TryAcquire(ctx, "stale", distlock.WithTTL(ttl))
	if answered := time.Now(); answered.Before(la.Deadline()) && !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("while A holds on 2 of 3 nodes (its deadline %v after B's answer), B got: %v", la.Deadline().Sub(answered), err)
	}
}

// TestRenewalWithMinorityDown: renewals keep a lease alive with a minority
// of nodes down (three renewals confirmed); when a majority goes, the
// holder is told at its deadline (Lease.Deadline), timer-driven: late only
// by the scheduling delay measured meanwhile, where a reply-driven loss
// would come a renewal later or never.
func TestRenewalWithMinorityDown(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	probe := enginetest.StartProbe(t)
	// The per-node timeout (1s) outlasts a healthy node's answer on a busy
	// machine and leaves two of the ttl's three seconds for the renewal.
	c := newClient(t, srvs, quorum.WithNodeTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ttl = 3 * time.Second
	l, err := c.Acquire(ctx, "renew", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs[:2] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	renewals, last := 0, l.Deadline()
	for renewals < 3 {
		select {
		case <-l.Done():
			if d := probe.Delay(); d >= lagprobe.Starved {
				t.Skipf("machine too slow: measured scheduling delay %v; lease lost after %d renewals: %v", d, renewals, l.Err())
			}
			t.Fatalf("lease lost with a minority down after %d renewals: %v", renewals, l.Err())
		case <-time.After(time.Millisecond):
		}
		if d := l.Deadline(); d.After(last) {
			renewals, last = renewals+1, d
		}
	}
	if err := srvs[2].Pause(); err != nil {
		t.Fatal(err)
	}
	defer srvs[2].Resume()
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("loss not signalled with a majority gone")
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || !errors.Is(l.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err = %v", l.Err())
	}
	if early := l.Deadline().Sub(lost.At); early > 0 {
		t.Fatalf("loss signalled %v before the deadline, with renewals still possible", early)
	}
	enginetest.Bounded(t, "the loss signal after the lease's deadline", lost.At.Sub(l.Deadline()), probe.Slack(), probe.Delay(), ttl/3)
}

// TestWithoutFencingIsOneRoundTrip: the phase-2 skip still grants and
// still mints tokens.
func TestWithoutFencing(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	c := newClient(t, srvs, quorum.WithoutFencing())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "nofence")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() == 0 {
		t.Fatal("no token")
	}
	_ = l.Release(ctx)
}

// TestMajorityUnreachableIsNotLocked: a lease is held on all five nodes,
// then three nodes die (or are SIGSTOPped). The two survivors still hold the
// old grant until it expires, yet what another Client hears is "no quorum"
// (a backend error with the per-node errors), never "locked": a minority's
// word cannot decide that the lock is held. The same for a waiting Acquire.
func TestMajorityUnreachableIsNotLocked(t *testing.T) {
	for _, fault := range []string{"kill", "stop"} {
		t.Run(fault, func(t *testing.T) {
			srvs := redistest.StartN(t, 5)
			// Node timeouts far above a busy machine's latency: the
			// survivors must answer, the stopped nodes time out.
			slow := quorum.WithNodeTimeout(time.Second)
			holder, other := newClient(t, srvs, slow), newClient(t, srvs, slow)
			ctx := context.Background()
			const ttl = 10 * time.Second
			l, err := holder.Acquire(ctx, "unreachable", distlock.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			// The grant returns once a majority granted; wait for the rest.
			if !eventually(10*time.Second, func() bool {
				for _, s := range srvs {
					if s.Client().Exists(ctx, lockKey("unreachable")).Val() != 1 {
						return false
					}
				}
				return true
			}) {
				t.Fatal("the grant did not reach every node")
			}
			// Warm the other Client's connections to every node.
			if _, err := other.TryAcquire(ctx, "unreachable"); !errors.Is(err, distlock.ErrLocked) {
				t.Fatalf("before the fault: %v, want locked", err)
			}
			for _, s := range srvs[2:] {
				if fault == "kill" {
					err = s.Kill()
				} else {
					err = s.Pause()
					defer s.Resume()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, distlock.ErrBackend) || !errors.Is(err, quorum.ErrNoQuorum) || errors.Is(err, distlock.ErrLocked) {
					t.Fatalf("%s with 3 of 5 nodes %s: %v, want no quorum and not locked", what, fault, err)
				}
				var nq *quorum.NoQuorumError
				if !errors.As(err, &nq) || len(nq.Errs) != 3 || nq.Held != 2 {
					t.Fatalf("%s: %v, want the 3 node errors and the 2 holders as detail", what, err)
				}
			}
			_, err = other.TryAcquire(ctx, "unreachable")
			check("TryAcquire", err)
			wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			defer cancel()
			_, err = other.Acquire(wctx, "unreachable")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiting Acquire: %v, want the deadline", err)
			}
			check("waiting Acquire", err)
			_ = l.Release(ctx)
		})
	}
}

// TestReleaseHalfDownIsUnknown: with an even count of nodes, a release
// that half of them fail says nothing of the others: the answer is no
// quorum, never "not held" while the grant is still on the other half.
// The live half is paused so that the killed half's fast failures decide.
func TestReleaseHalfDownIsUnknown(t *testing.T) {
	srvs := redistest.StartN(t, 4)
	c := newClient(t, srvs, quorum.WithNodeTimeout(time.Second))
	ctx := context.Background()
	const name = "half-down"
	l, err := c.Acquire(ctx, name, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool {
		for _, s := range srvs {
			if s.Client().Exists(ctx, lockKey(name)).Val() != 1 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the grant did not reach every node")
	}
	for _, s := range srvs[:2] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range srvs[2:] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		defer s.Resume()
	}
	err = l.Release(ctx)
	if errors.Is(err, distlock.ErrNotHeld) || !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("release with 2 of 4 nodes down and 2 paused: %v, want no quorum", err)
	}
}
