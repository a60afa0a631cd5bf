package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

const shortTTL = 300 * time.Millisecond

// watchdogKeeps holds a 300ms lease through 3s of work. A lease lost on
// the way fails the test when the engine said it was not held, or when
// the watchdog sent a renewal late; it skips the test when renewals sent
// on time were not answered before the deadline (a backend or machine too
// slow for a 300ms lease).
func (s *suite) watchdogKeeps(t *testing.T) {
	probe := StartProbe(t)
	wrapped, rec := countCalls(s.h.New(t))
	c := distlock.New(wrapped)
	t.Cleanup(func() { _ = c.Close() })
	name := lockName(t)
	ctx := ctxTimeout(t, 20*time.Second)
	asked := time.Now()
	l, err := c.Acquire(ctx, name, distlock.WithTTL(shortTTL))
	grantInTime(t, "the grant", err, shortTTL, asked)
	granted := time.Now()
	select {
	case <-l.Done():
		watchdogLost(t, l, rec, probe, asked, granted)
	case <-time.After(3 * time.Second):
	}
	info, err := s.client(t).Inspect(ctx, name)
	if err == nil && info.Owner != l.Owner() && l.Err() != nil {
		// Lost as the 3s ran out: the authority's expiry can come a moment
		// before the lease's timer runs, and Err compares the clock with the
		// deadline itself. Judged like any other loss.
		watchdogLost(t, l, rec, probe, asked, granted)
	}
	if err != nil || info.Owner != l.Owner() {
		t.Fatalf("after 3s: %+v %v (lease: %v)", info, err, l.Err())
	}
	if err := l.Release(ctx); err != nil {
		if errors.Is(err, distlock.ErrNotHeld) {
			// Lost between the Inspect and the release: judged like any
			// other loss.
			watchdogLost(t, l, rec, probe, asked, granted)
		}
		t.Fatal(err)
	}
}

// watchdogLost judges a lease l that the watchdog should have kept, lost
// anyway. It fails the test when the engine answered a renewal "not held"
// before the lease's deadline, when another owner took the lock, or when
// a renewal was sent later than due: a renew interval after the one
// before was sent, or when it was answered (the first: an interval after
// the grant was asked, at asked, or when it was granted), up to the
// scheduling delay measured. It skips the test when renewals sent on time were answered
// (or not) only after the deadline: a backend or machine too slow for the
// lease's ttl.
func watchdogLost(t *testing.T, l *distlock.Lease, rec *counting, probe *Probe, asked, granted time.Time) {
	t.Helper()
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || (lost.Cause != distlock.Unreachable && lost.Cause != distlock.Expired) {
		t.Fatalf("lease lost during work: %v", l.Err())
	}
	// Each renewal is due an interval after the one before was sent, and
	// is sent once that one was answered (the watchdog waits for it; a
	// failed one is retried sooner than an interval): how late it came
	// is judged from the later of the two.
	interval := l.TTL() / 3
	due, late := asked.Add(interval), time.Duration(0)
	if granted.After(due) {
		due = granted // (the watchdog takes the lease once granted)
	}
	var told *extendCall
	for _, x := range rec.extendsOf(l.Name()) {
		if x.sent.After(lost.At) {
			break
		}
		late = max(late, x.sent.Sub(due))
		due = x.sent.Add(interval)
		if x.answered.IsZero() {
			due = lost.At // still out at the loss: nothing was due after it
		} else if x.answered.After(due) {
			due = x.answered
		}
		if r, ok := x.result(l.Name()); ok && r.Err == nil && r.Status != engine.Extended && told == nil {
			told = &x
		}
	}
	late = max(late, lost.At.Sub(due))
	// Expired by an answer: the engine said not held before the lease's
	// deadline, which it must not. Expired with no such answer: the
	// deadline passed with no renewal out, which only a watchdog that
	// sent late explains, judged below.
	if lost.Cause == distlock.Expired && told != nil && told.answered.Before(l.Deadline()) {
		t.Fatalf("lease lost during work: a renewal was answered not held before the lease's deadline: %v", l.Err())
	}
	// A lease is lost at its deadline, ttl - drift after its last
	// confirmed renewal: more than two intervals. Renewals sent on time
	// are late by no more than scheduling.
	Bounded(t, "the latest renewal after it was due", late, probe.Slack(), probe.Delay(), interval)
	t.Skipf("machine too slow: renewals sent on time were answered (or not) only after the lease's deadline (slowest round trip answered: %v): %v",
		rec.Slowest(), l.Err())
}

// noRenewLoses is the control: the same lease without the watchdog is lost
// at its local deadline (Lease.Deadline), not before it and, up to the
// scheduling delay measured meanwhile, not after it; and the lock can be
// taken by another client. How late is BenchLoss's to measure.
func (s *suite) noRenewLoses(t *testing.T) {
	probe := StartProbe(t)
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 20*time.Second)
	asked := time.Now()
	l, err := c.Acquire(ctx, name, distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false))
	grantInTime(t, "the grant", err, shortTTL, asked)
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("lease without renewal never lost")
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Expired || !errors.Is(l.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want LostError(expired)", l.Err())
	}
	if early := l.Deadline().Sub(lost.At); early > 0 {
		t.Fatalf("loss signalled %v before the lease's deadline", early)
	}
	Bounded(t, "the loss signal after the lease's deadline", lost.At.Sub(l.Deadline()), probe.Slack(), probe.Delay(), l.TTL())
	if _, err := s.client(t).Acquire(ctx, name); err != nil {
		t.Fatalf("another client after expiry: %v", err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, distlock.ErrNotHeld) || !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Extend after loss: %v", err)
	}
}

// lossOnDelete: when the lock disappears behind the holder's back, the
// holder is told on all three channels by the answer to its next renewal:
// no renewal sent after the deletion is answered extended, the first one
// is sent within one renew interval (ttl/3) of the deletion, and the loss
// is signalled when its answer comes, each up to the scheduling delay
// measured meanwhile. The loss is Expired; TakenOver on an engine whose
// harness deletes by force-release (Harness.Delete nil).
func (s *suite) lossOnDelete(t *testing.T) {
	probe := StartProbe(t)
	wrapped, rec := countCalls(s.h.New(t))
	c := distlock.New(wrapped)
	t.Cleanup(func() { _ = c.Close() })
	name := lockName(t)
	ctx := ctxTimeout(t, 20*time.Second)
	asked := time.Now()
	l, err := c.Acquire(ctx, name, distlock.WithTTL(shortTTL))
	grantInTime(t, "the grant", err, shortTTL, asked)
	granted := time.Now()
	interval := l.TTL() / 3 // as the engine keeps the ttl (etcd: whole seconds, at least 2s)
	s.delete(t, s.client(t), name)
	deleted := time.Now()
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("loss never signalled after the deletion")
	}
	var lost *distlock.LostError
	if errors.As(l.Err(), &lost) && lost.Cause == distlock.Unreachable {
		watchdogLost(t, l, rec, probe, asked, granted) // renewals unanswered in time: skips, or fails if sent late
	}
	want := distlock.Expired // deleted behind its back
	if s.h.Delete == nil {
		want = distlock.TakenOver // by a force-release
	}
	if !errors.As(l.Err(), &lost) || lost.Cause != want {
		t.Fatalf("Err = %v, want lost as %q", l.Err(), want)
	}
	var told *extendCall
	for _, x := range rec.extendsOf(name) {
		r, ok := x.result(name)
		switch {
		case !ok || r.Err != nil: // out, or failed (then retried)
		case r.Status == engine.Extended && !x.sent.Before(deleted):
			t.Fatalf("a renewal sent %v after the deletion was answered extended", x.sent.Sub(deleted))
		case r.Status != engine.Extended && told == nil:
			told = &x
		}
	}
	if told == nil {
		t.Fatalf("the loss (%v) came from no renewal's answer: the lease ran out instead", l.Err())
	}
	Bounded(t, "the first renewal after the deletion", told.sent.Sub(deleted), interval+probe.Slack(), probe.Delay(), interval)
	Bounded(t, "the loss signal after the renewal's answer", lost.At.Sub(told.answered), probe.Slack(), probe.Delay(), interval)
	if l.Context().Err() == nil || !errors.Is(context.Cause(l.Context()), distlock.ErrLeaseLost) {
		t.Fatalf("lease context not cancelled with the loss: %v", context.Cause(l.Context()))
	}
	if err := l.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release after loss: %v, want ErrNotHeld", err)
	}
}

func (s *suite) do(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	boom := errors.New("boom")
	var token uint64
	err := c.Do(ctx, name, func(ctx context.Context) error {
		info, _ := c.Inspect(ctx, name)
		token = info.Token
		if !info.Held {
			t.Error("fn ran without the lock held")
		}
		return boom
	})
	if !errors.Is(err, boom) || err.Error() != boom.Error() {
		t.Fatalf("Do = %v, want fn's error alone", err)
	}
	if info, _ := c.Inspect(ctx, name); info.Held || token == 0 {
		t.Fatalf("after Do: %+v (token %d)", info, token)
	}
	if err := c.Do(ctx, name, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, name, nil); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("Do(nil fn) = %v", err)
	}
}

// doLoss: fn's context is cancelled when the lease is lost, and Do reports
// fn's error first, then the loss.
func (s *suite) doLoss(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	boom := errors.New("work interrupted")
	err := c.Do(ctx, name, func(fctx context.Context) error {
		s.delete(t, c, name)
		select {
		case <-fctx.Done():
		case <-ctx.Done():
			t.Error("fn's context not cancelled on loss")
		}
		if !errors.Is(context.Cause(fctx), distlock.ErrLeaseLost) {
			t.Errorf("cause = %v", context.Cause(fctx))
		}
		return boom
	}, distlock.WithTTL(shortTTL))
	if !errors.Is(err, boom) || !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Do = %v, want fn's error joined with the loss", err)
	}
	if u, ok := err.(interface{ Unwrap() []error }); !ok || !errors.Is(u.Unwrap()[0], boom) {
		t.Fatalf("fn's error is not first: %v", err)
	}
}

func (s *suite) closeReleases(t *testing.T) {
	c := distlock.New(s.h.New(t))
	other := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := c.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), distlock.ErrReleased) {
		t.Fatalf("lease after Close: %v", l.Err())
	}
	if info, _ := other.Inspect(ctx, name); info.Held {
		t.Fatalf("Close left the lock held: %+v", info)
	}
	if _, err := c.Acquire(ctx, name); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
