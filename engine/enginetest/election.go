package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// electionHandover: one leader at a time; a second campaigner waits, is
// elected when the first resigns, with a greater term; Leader and an
// observer on a third Client follow by notification.
func (s *suite) electionHandover(t *testing.T) {
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	a, b, o := s.client(t), s.client(t), s.client(t)
	if _, err := o.Leader(ctx, name); !errors.Is(err, distlock.ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v, want ErrNoLeader", err)
	}
	changes, err := o.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string, ok func(distlock.Leader) bool) { t.Helper(); observed(t, ctx, changes, what, ok) }
	next("no leader", func(st distlock.Leader) bool { return !st.Elected() })
	la, err := a.Campaign(ctx, name, "a")
	if err != nil {
		t.Fatal(err)
	}
	// (On a quorum an observer may first read a grant whose term phase 2
	// has not settled yet: the final state is what must arrive.)
	next("a elected in its term", func(st distlock.Leader) bool { return st.Value == "a" && st.Term == la.Term() })
	got := make(chan *distlock.Leadership, 1)
	go func() {
		lb, err := b.Campaign(ctx, name, "b")
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	WaitFor(t, 20*time.Second, "b to wait", func() bool {
		info, err := o.Inspect(ctx, name)
		return err == nil && info.Waiters > 0
	})
	if l, err := o.Leader(ctx, name); err != nil || l.Value != "a" || l.Term != la.Term() {
		t.Fatalf("Leader while a leads: %+v, %v", l, err)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	t.Cleanup(func() { _ = lb.Resign(ctx) })
	if lb.Term() <= la.Term() {
		t.Fatalf("term %d after term %d", lb.Term(), la.Term())
	}
	next("b elected in its term", func(st distlock.Leader) bool { return st.Value == "b" && st.Term == lb.Term() })
	if la.Err() == nil {
		t.Fatal("a resigned but its leadership is not over")
	}
}

// electionProclaim: a new value without a new election reaches observers;
// a deposed leader's Proclaim is refused and changes nothing; bad values
// are refused.
func (s *suite) electionProclaim(t *testing.T) {
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	c, o := s.client(t), s.client(t)
	l, err := c.Campaign(ctx, name, "v1")
	if err != nil {
		t.Fatal(err)
	}
	changes, err := o.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st := <-changes; st.Value != "v1" {
		t.Fatalf("first state %+v", st)
	}
	if err := l.Proclaim(ctx, "v2"); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-changes:
		if st.Value != "v2" || st.Term != l.Term() {
			t.Fatalf("after Proclaim: %+v, want v2 in term %d", st, l.Term())
		}
	case <-ctx.Done():
		t.Fatal("Proclaim not observed")
	}
	for _, bad := range []string{"", string(make([]byte, distlock.MaxMetadataLen+1))} {
		if err := l.Proclaim(ctx, bad); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("Proclaim(%d bytes): %v, want ErrInvalidArgument", len(bad), err)
		}
		if _, err := c.Campaign(ctx, name+"-x", bad); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("Campaign(%d bytes): %v, want ErrInvalidArgument", len(bad), err)
		}
	}
	// Deposed behind its back: its Proclaim is refused, and the lease ends.
	s.delete(t, c, name)
	other, err := o.Campaign(ctx, name, "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Proclaim(ctx, "late"); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("deposed Proclaim: %v, want ErrNotHeld", err)
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the deposed leadership did not end")
	}
	if st, err := o.Leader(ctx, name); err != nil || st.Value != "other" || st.Term != other.Term() {
		t.Fatalf("after the deposed Proclaim: %+v, %v", st, err)
	}
	if err := l.Resign(ctx); err == nil {
		t.Fatal("a deposed leader resigned without error")
	}
	if st, err := o.Leader(ctx, name); err != nil || st.Value != "other" {
		t.Fatalf("the deposed Resign changed the leader: %+v, %v", st, err)
	}
}

// electionExpiry: a leader that stops renewing is replaced after its ttl;
// its leadership ends first, and observers see the new leader.
func (s *suite) electionExpiry(t *testing.T) {
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	a, b := s.client(t), s.client(t)
	la, err := a.Campaign(ctx, name, "a", distlock.WithTTL(300*time.Millisecond), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	changes, err := b.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Campaign(ctx, name, "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lb.Resign(ctx) })
	if elected := time.Now(); !la.Lease().Deadline().Before(elected) {
		t.Fatalf("b was elected while a's leadership was still valid (until %v)", la.Lease().Deadline().Sub(elected))
	}
	select {
	case <-la.Done():
	case <-ctx.Done():
		t.Fatal("a's leadership never ended")
	}
	for st := range changes {
		if st.Value == "b" && st.Term == lb.Term() {
			return
		}
	}
	t.Fatal("the observer never saw b")
}

// electionWaitersCount: Inspect's Waiters counts the live queue entries
// only, on every engine: with a leader, an observer and one candidate
// queued it is 1 (the observer's subscription is no waiter), and 0 again
// once the candidate gives up while the observer still watches.
func (s *suite) electionWaitersCount(t *testing.T) {
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	a, b, o := s.client(t), s.client(t), s.client(t)
	la, err := a.Campaign(ctx, name, "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = la.Resign(ctx) })
	changes, err := o.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	observed(t, ctx, changes, "a elected", func(st distlock.Leader) bool { return st.Value == "a" && st.Term == la.Term() })
	if info, err := o.Inspect(ctx, name); err != nil || info.Waiters != 0 {
		t.Fatalf("a leader and an observer: %d waiters, %v; want 0", info.Waiters, err)
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.Campaign(bctx, name, "b")
		done <- err
	}()
	var info distlock.Info
	WaitFor(t, 20*time.Second, "b to queue", func() bool {
		info, err = o.Inspect(ctx, name)
		return err == nil && info.Waiters > 0
	})
	if info.Waiters != 1 {
		t.Fatalf("one candidate queued and one observer: %d waiters, want 1", info.Waiters)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled campaign: %v", err)
	}
	WaitFor(t, 20*time.Second, "b to leave the queue", func() bool {
		info, err = o.Inspect(ctx, name)
		return err == nil && info.Waiters == 0
	})
}

// electionCampaignAgain: a second Campaign by the leader's own owner
// re-enters (same term) and proclaims its value: the new Leadership's
// Value, Leader and the observers agree on it, on every engine; the
// election stays led until both Leaderships resigned.
func (s *suite) electionCampaignAgain(t *testing.T) {
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	c, o := s.client(t), s.client(t)
	owner := distlock.WithOwner("leader-" + name)
	l1, err := c.Campaign(ctx, name, "v1", owner)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := o.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	observed(t, ctx, changes, "v1 elected", func(st distlock.Leader) bool { return st.Value == "v1" && st.Term == l1.Term() })
	l2, err := c.Campaign(ctx, name, "v2", owner)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Term() != l1.Term() || l2.Value() != "v2" {
		t.Fatalf("second campaign: term %d value %q, want term %d value v2", l2.Term(), l2.Value(), l1.Term())
	}
	if st, err := o.Leader(ctx, name); err != nil || st.Value != "v2" || st.Term != l1.Term() {
		t.Fatalf("Leader after the second campaign: %+v, %v; want v2 in term %d", st, err, l1.Term())
	}
	observed(t, ctx, changes, "v2 proclaimed", func(st distlock.Leader) bool { return st.Value == "v2" && st.Term == l1.Term() })
	if err := l2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := o.Leader(ctx, name); err != nil || st.Value != "v2" || st.Term != l1.Term() {
		t.Fatalf("Leader after one of two Resigns: %+v, %v; want v2 in term %d", st, err, l1.Term())
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Leader(ctx, name); !errors.Is(err, distlock.ErrNoLeader) {
		t.Fatalf("Leader after both Resigns: %v, want ErrNoLeader", err)
	}
}

// observed waits for a state on an observer's channel that ok accepts.
func observed(t *testing.T, ctx context.Context, changes <-chan distlock.Leader, what string, ok func(distlock.Leader) bool) {
	t.Helper()
	for {
		select {
		case st, open := <-changes:
			if !open {
				t.Fatalf("%s: the observer's channel closed", what)
			}
			if ok(st) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s: not observed", what)
		}
	}
}

// electionObserveForward: observers started while the leader proclaims
// value after value report the values of its term in the order they were
// proclaimed, never an older one after a newer (docs/ELECTION.md: a
// reordered message never replaces a newer one). An observer's first read
// may overtake notices sent before it and delivered after it; on Redis
// such a notice was reported after the read's newer value (an outside
// tester's finding), so a value of a term a read found is read again,
// not taken from the notice.
func (s *suite) electionObserveForward(t *testing.T) {
	if s.h.MajorityValues {
		t.Skip("the engine's readings of a term's value are a majority's, not ordered (Harness.MajorityValues)")
	}
	ctx := ctxTimeout(t, 60*time.Second)
	name := lockName(t)
	a, o := s.client(t), s.client(t)
	l, err := a.Campaign(ctx, name, "v0", distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Resign(ctx) }()
	const rounds, values, observers = 8, 25, 4
	for round := range rounds {
		octx, stop := context.WithCancel(ctx)
		seen := make([][]int, observers)
		done := make(chan int, observers)
		final := (round+1)*1000 + values
		for i := range observers {
			ch, err := o.Observe(octx, name)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				// Until the final value is seen (or the round is stopped).
				defer func() { done <- i }()
				for st := range ch {
					var n int
					if _, err := fmt.Sscanf(st.Value, "v%d", &n); err != nil {
						continue
					}
					seen[i] = append(seen[i], n)
					if n == final {
						return
					}
				}
			}()
		}
		for j := 1; j <= values; j++ {
			if err := l.Proclaim(ctx, fmt.Sprint("v", (round+1)*1000+j)); err != nil {
				t.Fatal(err)
			}
		}
		for range observers {
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("round %d: an observer never reported the final value v%d", round, final)
			}
		}
		stop()
		for i, vs := range seen {
			for k := 1; k < len(vs); k++ {
				if vs[k] < vs[k-1] {
					t.Fatalf("round %d, observer %d: v%d reported after v%d: %v", round, i, vs[k], vs[k-1], vs)
				}
			}
		}
	}
}

// electionDeposedSameOwner: a leadership force-released by an admin whose
// owner (a shared WithOwner: a restarted process of the same node) is
// elected again, under a newer term, is deposed: its Proclaim names its
// own term (engine.MetadataRequest.Token) and is refused with ErrNotHeld,
// changes nothing (Leader reports the new term with the new leader's
// value), and ends the old leadership; its Resign leaves the new term
// leading. Skipped where the engine does not check grant tokens
// (Harness.UncheckedTokens: a quorum).
func (s *suite) electionDeposedSameOwner(t *testing.T) {
	if s.h.UncheckedTokens {
		t.Skip("the engine does not check grant tokens (Harness.UncheckedTokens)")
	}
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	e := s.h.New(t)
	if _, ok := e.(engine.ForceReleaser); !ok {
		t.Skip("the engine cannot force-release (engine.ForceReleaser)")
	}
	adm := distlock.New(e)
	t.Cleanup(func() { _ = adm.Close() })
	c1, c2 := s.client(t), s.client(t)
	owner := distlock.WithOwner("node-" + name)
	// No watchdog: a renewal must not tell l1 before its Proclaim does.
	l1, err := c1.Campaign(ctx, name, "p1", owner, distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	if freed, err := adm.ForceRelease(ctx, name); err != nil || !freed {
		t.Fatalf("force-release: %v, %v", freed, err)
	}
	l2, err := c2.Campaign(ctx, name, "p2", owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l2.Resign(context.Background()) })
	if l2.Term() <= l1.Term() {
		t.Fatalf("the term after the force-release is %d, not above %d", l2.Term(), l1.Term())
	}
	if err := l1.Err(); err != nil {
		t.Fatalf("the deposed leadership ended before its Proclaim (no watchdog): %v", err)
	}
	if err := l1.Proclaim(ctx, "stale"); !errors.Is(err, distlock.ErrNotHeld) {
		t.Errorf("Proclaim by the deposed leadership of term %d (term %d leads): %v, want ErrNotHeld", l1.Term(), l2.Term(), err)
	}
	if err := l1.Err(); err == nil {
		t.Errorf("the deposed leadership of term %d still leads (Err nil) after its refused Proclaim", l1.Term())
	}
	if st, err := adm.Leader(ctx, name); err != nil || st.Value != "p2" || st.Term != l2.Term() {
		t.Errorf("Leader after the deposed Proclaim: %+v, %v; want p2 in term %d", st, err, l2.Term())
	}
	_ = l1.Resign(ctx)
	if st, err := adm.Leader(ctx, name); err != nil || st.Value != "p2" || st.Term != l2.Term() {
		t.Errorf("Leader after the deposed Resign: %+v, %v; want p2 in term %d", st, err, l2.Term())
	}
	if err := l2.Err(); err != nil {
		t.Fatalf("the new leadership ended: %v", err)
	}
	if err := l2.Proclaim(ctx, "p2b"); err != nil {
		t.Fatalf("the new leader's Proclaim: %v", err)
	}
	if st, err := adm.Leader(ctx, name); err != nil || st.Value != "p2b" || st.Term != l2.Term() {
		t.Errorf("Leader after the new leader's Proclaim: %+v, %v; want p2b in term %d", st, err, l2.Term())
	}
}
