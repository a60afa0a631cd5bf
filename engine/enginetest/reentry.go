package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// reentryKind is how reentryExpiry takes and inspects one kind of lock,
// and how another owner tries to take it in a way the holder excludes
// (nil: as acquire).
type reentryKind struct {
	acquire, other func(ctx context.Context, c *distlock.Client, name string, opts ...distlock.Option) (*distlock.Lease, error)
	inspect        func(ctx context.Context, c *distlock.Client, name string) (distlock.Info, error)
}

var reentryKinds = map[string]reentryKind{
	"mutex": {
		acquire: func(ctx context.Context, c *distlock.Client, name string, opts ...distlock.Option) (*distlock.Lease, error) {
			return c.TryAcquire(ctx, name, opts...)
		},
		inspect: func(ctx context.Context, c *distlock.Client, name string) (distlock.Info, error) {
			return c.Inspect(ctx, name)
		},
	},
	"semaphore": {
		acquire: func(ctx context.Context, c *distlock.Client, name string, opts ...distlock.Option) (*distlock.Lease, error) {
			return c.Semaphore(name, 1).TryAcquire(ctx, opts...)
		},
		inspect: func(ctx context.Context, c *distlock.Client, name string) (distlock.Info, error) {
			return c.Semaphore(name, 1).Inspect(ctx)
		},
	},
	"rwread": {
		acquire: func(ctx context.Context, c *distlock.Client, name string, opts ...distlock.Option) (*distlock.Lease, error) {
			return c.RWMutex(name).TryRLock(ctx, opts...)
		},
		other: func(ctx context.Context, c *distlock.Client, name string, opts ...distlock.Option) (*distlock.Lease, error) {
			return c.RWMutex(name).TryLock(ctx, opts...)
		},
		inspect: func(ctx context.Context, c *distlock.Client, name string) (distlock.Info, error) {
			return c.RWMutex(name).Inspect(ctx)
		},
	},
}

// reentryExpiry checks that a re-entry or an Extend with a shorter ttl
// never moves the authority's expiry of an owner's holds before the
// deadline of another of its live leases (docs/API.md, re-entry), for a
// mutex, a semaphore's permit and a reader of an RW lock; and that a lone hold's Extend still
// shortens it.
func (s *suite) reentryExpiry(t *testing.T) {
	for _, kind := range []string{"mutex", "semaphore", "rwread"} {
		t.Run(kind, func(t *testing.T) {
			if kind != "mutex" {
				if _, ok := s.h.New(t).(engine.Sharer); !ok {
					t.Skip("the engine has no shared locks")
				}
			}
			k := reentryKinds[kind]
			for _, step := range []struct {
				name string
				fn   func(t *testing.T, k reentryKind)
			}{
				{"ShortReentry", s.reentryShort},
				{"ShortReentryRenewed", s.reentryShortRenewed},
				{"ShorterExtend", s.reentryShorterExtend},
				{"LoneExtendShortens", s.loneExtendShortens},
			} {
				t.Run(step.name, func(t *testing.T) { step.fn(t, k) })
			}
		})
	}
}

// reentryTTLs returns the short ttl for the test (at least the engine's
// minimum) and a long one.
func (s *suite) reentryTTLs(t *testing.T) (short, long time.Duration) {
	short = shortTTL
	if m := engine.CapabilitiesOf(s.h.New(t)).MinTTL; m > short {
		short = m
	}
	return short, 100 * short
}

// reentryOwner returns an owner id unique to the test.
func reentryOwner() distlock.Option {
	return distlock.WithOwner(fmt.Sprintf("reentry-%x", rand.Uint64()))
}

// holdLong takes the first hold: a long lease without a watchdog.
func (s *suite) holdLong(t *testing.T, ctx context.Context, c *distlock.Client, k reentryKind, name string, owner distlock.Option) *distlock.Lease {
	t.Helper()
	_, long := s.reentryTTLs(t)
	a, err := k.acquire(ctx, c, name, owner, distlock.WithTTL(long), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// coversLease fails the test unless the authority's expiry of l's hold,
// as Inspect reports it, is no earlier than l's deadline.
func (s *suite) coversLease(t *testing.T, ctx context.Context, c *distlock.Client, k reentryKind, l *distlock.Lease, what string) {
	t.Helper()
	sent := time.Now()
	info, err := k.inspect(ctx, c, l.Name())
	if err != nil {
		t.Fatalf("%s: inspect: %v", what, err)
	}
	answered := time.Now()
	var h *engine.Holder
	for i := range info.Holders {
		if info.Holders[i].Owner == l.Owner() {
			h = &info.Holders[i]
		}
	}
	if h == nil {
		skipIfEnded(t, l, sent)
		t.Fatalf("%s: %s does not hold the lock: %+v (lease: %v)", what, l.Owner(), info, l.Err())
	}
	// The authority judged the ttl before it answered, so the expiry is at
	// most answered + ttl (Inspect may truncate the ttl to the engine's
	// granularity): earlier than the deadline is a failure whatever the
	// delays, and a failure is never a slow answer.
	slack := engine.CapabilitiesOf(s.h.New(t)).TTLGranularity + time.Millisecond
	if expiry := answered.Add(h.TTL + slack); expiry.Before(l.Deadline()) {
		t.Fatalf("%s: the authority expires the hold %v before the lease's deadline (ttl %v, lease has %v left)",
			what, l.Deadline().Sub(expiry), h.TTL, time.Until(l.Deadline()))
	}
}

// skipIfEnded skips the test when l's deadline had passed by sent, the
// sending of a request that found its hold gone: the lease ended on its
// own (a machine too slow to ask within a short ttl), which proves
// nothing either way. A hold gone before its deadline is still a failure.
func skipIfEnded(t *testing.T, l *distlock.Lease, sent time.Time) {
	t.Helper()
	if !sent.Before(l.Deadline()) {
		t.Skipf("machine too slow: the lease's deadline passed %v before the request was sent", sent.Sub(l.Deadline()))
	}
}

// stillHeld waits until the short ttl, from answered, has surely passed at
// the authority, then checks that the owner's hold is kept for a, which
// is still valid: another owner is refused.
func (s *suite) stillHeld(t *testing.T, ctx context.Context, c *distlock.Client, k reentryKind, a *distlock.Lease, answered time.Time) {
	t.Helper()
	short, _ := s.reentryTTLs(t)
	gone := answered.Add(short + engine.CapabilitiesOf(s.h.New(t)).TTLGranularity)
	WaitFor(t, time.Until(gone)+time.Second, "the short ttl to pass", func() bool { return time.Now().After(gone) })
	if err := a.Err(); err != nil {
		t.Skipf("the long lease ended before the check: %v", err)
	}
	other := k.other
	if other == nil {
		other = k.acquire
	}
	o, err := other(ctx, s.client(t), a.Name(), reentryOwner(), distlock.WithTTL(short))
	if err == nil {
		_ = o.Release(ctx)
		t.Fatalf("another owner took the lock while %s's lease was valid (%v left)", a.Owner(), time.Until(a.Deadline()))
	}
	if !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("another owner: %v, want ErrLocked", err)
	}
	s.coversLease(t, ctx, c, k, a, "after the short ttl")
}

// reentryShort: a long hold re-entered with a short ttl keeps the long
// expiry, before and after the short one ran out.
func (s *suite) reentryShort(t *testing.T, k reentryKind) {
	s.shortSecond(t, k, "a short re-entry", func(ctx context.Context, c *distlock.Client, name string, owner distlock.Option, short time.Duration) *distlock.Lease {
		asked := time.Now()
		b, err := k.acquire(ctx, c, name, owner, distlock.WithTTL(short), distlock.WithAutoRenew(false))
		grantInTime(t, "re-entry", err, short, asked)
		return b
	})
}

// reentryShorterExtend: an Extend with a shorter ttl on one of two holds
// does not shorten the expiry under the other.
func (s *suite) reentryShorterExtend(t *testing.T, k reentryKind) {
	s.shortSecond(t, k, "a shorter Extend of the other hold", func(ctx context.Context, c *distlock.Client, name string, owner distlock.Option, short time.Duration) *distlock.Lease {
		b := s.holdLong(t, ctx, c, k, name, owner)
		sent := time.Now()
		if err := b.Extend(ctx, short); err != nil {
			var lost *distlock.LostError
			if took := time.Since(sent); errors.As(err, &lost) && lost.Cause == distlock.Expired && took >= short-engine.Drift(short) {
				// Answered after the ttl it asked for had run out from
				// its send: the backend or machine too slow for it.
				t.Skipf("machine too slow: the Extend to %v was answered after %v: %v", short, took, err)
			}
			t.Fatal(err)
		}
		return b
	})
}

// shortSecond holds a lock long, then has second give the same owner a
// second hold whose ttl is short, and checks that the first hold's lease
// stays covered, before and after the short ttl ran out.
func (s *suite) shortSecond(t *testing.T, k reentryKind, what string, second func(ctx context.Context, c *distlock.Client, name string, owner distlock.Option, short time.Duration) *distlock.Lease) {
	c := s.client(t)
	name, owner := lockName(t), reentryOwner()
	ctx := ctxTimeout(t, 60*time.Second)
	short, _ := s.reentryTTLs(t)
	a := s.holdLong(t, ctx, c, k, name, owner)
	b := second(ctx, c, name, owner, short)
	answered := time.Now()
	s.coversLease(t, ctx, c, k, a, "after "+what)
	s.stillHeld(t, ctx, c, k, a, answered)
	_ = b.Release(ctx)
	_ = a.Release(ctx)
}

// reentryShortRenewed: a short re-entry whose watchdog renews it, then
// released, leaves the long hold's expiry where it was.
func (s *suite) reentryShortRenewed(t *testing.T, k reentryKind) {
	c := s.client(t)
	name, owner := lockName(t), reentryOwner()
	ctx := ctxTimeout(t, 60*time.Second)
	short, _ := s.reentryTTLs(t)
	a := s.holdLong(t, ctx, c, k, name, owner)
	asked := time.Now()
	b, err := k.acquire(ctx, c, name, owner, distlock.WithTTL(short))
	grantInTime(t, "re-entry", err, short, asked)
	// Wait for the watchdog's second renewal: b's deadline moved twice.
	first := b.Deadline()
	var renewed time.Time
	WaitFor(t, 10*short, "two renewals of the short re-entry", func() bool {
		if d := b.Deadline(); d.After(first) && renewed.IsZero() {
			renewed = d
		}
		return b.Err() != nil || (!renewed.IsZero() && b.Deadline().After(renewed))
	})
	if err := b.Err(); err != nil {
		t.Skipf("the short re-entry was lost before its renewals: %v", err)
	}
	s.coversLease(t, ctx, c, k, a, "while the short re-entry renews")
	if err := b.Release(ctx); err != nil {
		var lost *distlock.LostError
		if errors.As(err, &lost) && (lost.Cause == distlock.Unreachable || lost.Cause == distlock.Expired && !lost.At.Before(b.Deadline())) {
			// A renewal of the short ttl not answered in time, or not
			// sent in time (lost at its deadline, not by an answer that
			// said "not held" before it): the backend or machine too
			// slow for it, as above.
			t.Skipf("machine too slow: the short re-entry was lost meanwhile: %v", err)
		}
		t.Fatal(err)
	}
	s.coversLease(t, ctx, c, k, a, "after the short re-entry's release")
	s.stillHeld(t, ctx, c, k, a, time.Now())
	_ = a.Release(ctx)
}

// loneExtendShortens: with a single hold, Extend sets the ttl it asks
// for, shorter ones too; so does the hold left after a re-entry's release.
func (s *suite) loneExtendShortens(t *testing.T, k reentryKind) {
	c := s.client(t)
	name, owner := lockName(t), reentryOwner()
	ctx := ctxTimeout(t, 60*time.Second)
	short, _ := s.reentryTTLs(t)
	slack := engine.CapabilitiesOf(s.h.New(t)).TTLGranularity + time.Millisecond
	a := s.holdLong(t, ctx, c, k, name, owner)
	b := s.holdLong(t, ctx, c, k, name, owner)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	grantInTime(t, "the lone hold's Extend", a.Extend(ctx, short), short, sent)
	asked := time.Now()
	info, err := k.inspect(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Holders) == 0 {
		skipIfEnded(t, a, asked)
	}
	if len(info.Holders) != 1 || info.Holders[0].Owner != a.Owner() || info.Holders[0].TTL > short+slack {
		t.Fatalf("after a lone hold's Extend(%v): %+v, want its ttl at most %v", short, info.Holders, short+slack)
	}
	s.coversLease(t, ctx, c, k, a, "after a lone hold's shorter Extend")
	_ = a.Release(ctx)
}
