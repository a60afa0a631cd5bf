//go:build unix

package remote_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/remote"
)

// TestStrangerShareOfCallerTimeOnStoppedServer: two server processes on
// one Redis, a Client naming both, the first stopped (SIGSTOP: its
// connections stay open, nothing is answered). An acquire with a budget
// must give the stopped server its share of the caller's time (half, with
// two servers) and be granted through the second within that budget, as
// API.md promises ("Running several servers"); after it, the second server
// is current, so the next call does not wait out the stopped server's
// share again.
//
// The Client sends an acquire on its flight context, whose deadline is the
// caller's plus the release timeout (so that a grant answered after the
// caller left is learnt and undone); the share was computed from that
// deadline, (budget + 5 s)/2, so every acquire with a budget under about
// 5 s failed on the stopped server with the caller's DeadlineExceeded, and
// the stopped server stayed current until the share ran out in the
// background. The share is now the caller's: budget/2.
//
// Bounds from the mechanism: the first call returns no earlier than the
// share (its timer cannot fire early) and is granted within the caller's
// budget; the second call, had it gone to the stopped server first, could
// return no earlier than its own share, so it must return before that
// (or the machine is too slow to judge: skipped).
func TestStrangerShareOfCallerTimeOnStoppedServer(t *testing.T) {
	const budget = 4 * time.Second // the second server gets budget/2 to vet and grant
	calls := map[string]func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error){
		"Acquire": func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.Acquire(ctx, name, distlock.WithTTL(30*time.Second))
		},
		"TryAcquire": func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.TryAcquire(ctx, name, distlock.WithTTL(30*time.Second))
		},
	}
	for _, kind := range []string{"Acquire", "TryAcquire"} {
		call := calls[kind]
		t.Run(kind, func(t *testing.T) {
			srvs, direct, _ := procServers(t, 2)
			a, b := srvs[0], srvs[1]
			c := strangerClient(t, a.URL(), b.URL())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Warm-up through the first server: it is vetted and current.
			warm, err := call(c, ctx, "warm")
			if err != nil {
				t.Fatal(err)
			}
			if err := warm.Release(ctx); err != nil {
				t.Fatal(err)
			}
			a.pause()
			probe := enginetest.StartProbe(t)

			for i, first := range []bool{true, false} {
				name := fmt.Sprintf("free%d", i)
				start := time.Now()
				bctx, bcancel := context.WithTimeout(ctx, budget)
				l, err := call(c, bctx, name)
				took := time.Since(start)
				bcancel()
				if err != nil {
					t.Fatalf("%s %d with %v, the first server stopped and the second up: %v after %v; want a grant through the second server after the stopped one's share (%v)",
						kind, i+1, budget, err, took.Round(time.Millisecond), budget/2)
				}
				t.Logf("%s %d granted after %v (share of the stopped server %v)", kind, i+1, took.Round(time.Millisecond), budget/2)
				info, err := direct.Inspect(ctx, name)
				if err != nil || !info.Held || info.Owner != l.Owner() || info.Token != l.Token() {
					t.Fatalf("Redis shows %+v, %v; want held by the lease (token %d)", info, err, l.Token())
				}
				if first && took < budget/2 {
					t.Errorf("granted after %v, before the stopped server's share (%v) ran out: was it tried first?", took, budget/2)
				}
				if !first {
					enginetest.Bounded(t, kind+" after the failover (the stopped server no longer current)", took, budget/2, probe.Delay(), budget/4)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestStrangerLateGrantSettledAfterShare: the caller's time is shared
// among the servers, while the acquire stays on the wire for the flight's
// added time (the Client's release timeout) so that a grant answered after
// the caller left is undone. Both servers stopped, a TryAcquire with a
// budget returns at its deadline with the context's error; its request
// has gone on from the first server (after its share) to the second,
// which is then continued and grants: the Client must release that grant
// (Redis shows a token minted for the name, and the name free), not leave
// it held by nobody until its ttl.
func TestStrangerLateGrantSettledAfterShare(t *testing.T) {
	const budget = time.Second
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	e, err := remote.New(a.URL() + "," + b.URL())
	if err != nil {
		t.Fatal(err)
	}
	// A flight long enough for the second server's answer after the
	// continue, however slowly the machine runs it.
	c := distlock.New(e, distlock.WithReleaseTimeout(30*time.Second))
	t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	warm, err := c.TryAcquire(ctx, "warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a.pause()
	contB := b.pause()
	probe := enginetest.StartProbe(t)

	start := time.Now()
	bctx, bcancel := context.WithTimeout(ctx, budget)
	l, err := c.TryAcquire(bctx, "late", distlock.WithTTL(time.Minute))
	took := time.Since(start)
	bcancel()
	if err == nil {
		t.Fatalf("granted (token %d) with both servers stopped", l.Token())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire with both servers stopped: %v; want the caller's DeadlineExceeded", err)
	}
	enginetest.Bounded(t, "TryAcquire's return after its deadline", took, budget+probe.Slack(), probe.Delay(), budget)
	contB()
	enginetest.WaitFor(t, 60*time.Second, "the late grant to be made and released", func() bool {
		info, err := direct.Inspect(ctx, "late")
		return err == nil && info.HighWater > 0 && !info.Held
	})
}
