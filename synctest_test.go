package distlock_test

// The Client's own time logic on a fake clock (testing/synctest): lease
// deadlines, the watchdog's renewal ticks, loss at the local deadline, the
// wait loop's sleeps and the waiters' heartbeats, against the embedded
// engine. Inside a bubble time moves only when every goroutine of the
// bubble is blocked, so these tests sleep for nothing and can assert exact
// instants: a loss happens at Deadline(), not "within a second of it".
//
// The Client and its engine must be made inside the bubble (synctest.Test's
// function): the Client's channels and timers then belong to it, and the
// memory engine reads the bubble's clock (it starts no goroutine or timer of
// its own).

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// fakeTTL is the ttl of the tests' leases: renewals every second.
const fakeTTL = 3 * time.Second

// validity is the local validity of a grant or renewal sent at sent with
// ttl: the documented deadline (ttl minus the drift allowance).
func validity(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - engine.Drift(ttl))
}

// extendLog is the memory engine with its Extend calls recorded (the
// bubble's time of each, and its requests), and with a switch that makes
// Extend fail or hang from a point on.
type extendLog struct {
	*memory.Engine
	mu    sync.Mutex
	calls []extendCall
	fail  error // Extend answers this error
	hang  bool  // Extend waits for its context to end
}

type extendCall struct {
	at   time.Time
	reqs []engine.ExtendRequest
}

func newExtendLog() *extendLog { return &extendLog{Engine: memory.New()} }

func (e *extendLog) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	e.mu.Lock()
	e.calls = append(e.calls, extendCall{at: time.Now(), reqs: rs})
	fail, hang := e.fail, e.hang
	e.mu.Unlock()
	switch {
	case hang:
		<-ctx.Done()
		return nil, ctx.Err()
	case fail != nil:
		return nil, fail
	}
	return e.Engine.Extend(ctx, rs)
}

// set changes how later Extend calls answer.
func (e *extendLog) set(fail error, hang bool) {
	e.mu.Lock()
	e.fail, e.hang = fail, hang
	e.mu.Unlock()
}

// times returns when Extend was called with a request for owner (a lease
// or a waiter id), from the first call on.
func (e *extendLog) times(owner string) []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	var at []time.Time
	for _, c := range e.calls {
		for _, r := range c.reqs {
			if r.Owner == owner {
				at = append(at, c.at)
			}
		}
	}
	return at
}

// watched starts a Client on an extendLog (closed when the test ends) and
// acquires name with fakeTTL and auto-renewal; it returns the send time of
// the grant too.
func watched(t *testing.T, name string) (*extendLog, *distlock.Lease, time.Time) {
	t.Helper()
	eng := newExtendLog()
	c := distlock.New(eng)
	t.Cleanup(func() { _ = c.Close() })
	start := time.Now()
	l, err := c.Acquire(context.Background(), name, distlock.WithTTL(fakeTTL))
	if err != nil {
		t.Fatal(err)
	}
	return eng, l, start
}

// offsets returns ts as durations since start, for messages and compares.
func offsets(start time.Time, ts []time.Time) []time.Duration {
	d := make([]time.Duration, len(ts))
	for i, t := range ts {
		d[i] = t.Sub(start)
	}
	return d
}

// lostBy waits for l to end, on the bubble's clock, and fails the test if it
// has not ended by limit: a broken watchdog then fails instead of renewing
// (or retrying) forever in fake time.
func lostBy(t *testing.T, l *distlock.Lease, limit time.Time) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(time.Until(limit)):
		t.Fatalf("lease still held %v after the local deadline", time.Since(l.Deadline()))
	}
}

// TestFakeClockDeadline: a lease without renewal gets the deadline the
// docs state (send time + ttl - drift), is lost exactly then as expired,
// and the engine still holds the lock for the drift allowance after: the
// holder is told before anybody else can be granted it.
func TestFakeClockDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		start := time.Now()
		l, err := c.Acquire(ctx, "deadline", distlock.WithTTL(fakeTTL), distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		want := validity(start, fakeTTL)
		if !l.Deadline().Equal(want) {
			t.Fatalf("Deadline %v after the send, want %v", l.Deadline().Sub(start), want.Sub(start))
		}
		lostBy(t, l, want.Add(fakeTTL))
		if now := time.Now(); !now.Equal(want) {
			t.Fatalf("lost %v after the send, want exactly at the deadline %v", now.Sub(start), want.Sub(start))
		}
		var lost *distlock.LostError
		if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Expired || !lost.At.Equal(want) {
			t.Fatalf("Err %v, want lost (expired) at the deadline", l.Err())
		}
		info, err := eng.Inspect(ctx, "deadline")
		if err != nil || !info.Held || info.TTL != engine.Drift(fakeTTL) {
			t.Fatalf("the engine at the local deadline: %+v %v, want held for the drift allowance %v", info, err, engine.Drift(fakeTTL))
		}
	})
}

// TestFakeClockRenewTicks: the watchdog renews every ttl/3 from the send
// time of the last confirmed renewal, and each renewal moves the deadline
// to its own send time + ttl - drift; the lease is held all along.
func TestFakeClockRenewTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng, l, start := watched(t, "ticks")
		const renewals = 6
		time.Sleep(renewals*fakeTTL/3 + fakeTTL/6) // between two ticks
		synctest.Wait()
		got := eng.times(l.Owner())
		if len(got) != renewals {
			t.Fatalf("%d renewals in %v: at %v, want %d", len(got), time.Since(start), offsets(start, got), renewals)
		}
		for i, at := range got {
			if want := start.Add(time.Duration(i+1) * fakeTTL / 3); !at.Equal(want) {
				t.Fatalf("renewals at %v, want every %v", offsets(start, got), fakeTTL/3)
			}
		}
		if l.Err() != nil {
			t.Fatalf("lease lost while renewed: %v", l.Err())
		}
		if want := validity(got[len(got)-1], fakeTTL); !l.Deadline().Equal(want) {
			t.Fatalf("Deadline %v after the start, want the last renewal's %v", l.Deadline().Sub(start), want.Sub(start))
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFakeClockLossWhenRenewalsHang: when renewals hang, the lease is lost
// at the deadline of the last confirmed renewal, exactly, as unreachable:
// the local timer, not an answer, ends it.
func TestFakeClockLossWhenRenewalsHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng, l, _ := watched(t, "hang")
		time.Sleep(fakeTTL/3 + fakeTTL/6) // one renewal confirmed
		synctest.Wait()
		renewed := eng.times(l.Owner())
		if len(renewed) != 1 {
			t.Fatalf("renewals before the fault at %v, want one", renewed)
		}
		deadline := l.Deadline()
		if want := validity(renewed[0], fakeTTL); !deadline.Equal(want) {
			t.Fatalf("Deadline %v, want %v (the renewal's)", deadline, want)
		}
		eng.set(nil, true)
		lostBy(t, l, deadline.Add(fakeTTL))
		if now := time.Now(); !now.Equal(deadline) {
			t.Fatalf("lost %v after the deadline, want exactly at it", now.Sub(deadline))
		}
		var lost *distlock.LostError
		if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Unreachable || lost.Err == nil {
			t.Fatalf("Err %v, want lost (unreachable) with the reason", l.Err())
		}
		// The renewal in flight was sent on the next tick and waited for
		// its answer until the deadline, not longer.
		if hung := eng.times(l.Owner()); len(hung) != 2 || !hung[1].Equal(renewed[0].Add(fakeTTL/3)) {
			t.Fatalf("renewals %v, want the hanging one a tick after the first", hung)
		}
	})
}

// errDown is the engine failure of TestFakeClockLossWhenRenewalsFail.
var errDown = errors.New("engine down")

// TestFakeClockLossWhenRenewalsFail: failed renewals are retried after a
// jittered pause of ttl/10 (at most 1s) each, and the lease is lost at the
// deadline of the last confirmed renewal, exactly, as unreachable with the
// last failure as the reason.
func TestFakeClockLossWhenRenewalsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng, l, start := watched(t, "fail")
		eng.set(errDown, false)
		deadline := l.Deadline()
		lostBy(t, l, deadline.Add(fakeTTL))
		if now := time.Now(); !now.Equal(deadline) {
			t.Fatalf("lost %v after the deadline, want exactly at it", now.Sub(deadline))
		}
		var lost *distlock.LostError
		if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Unreachable || !errors.Is(lost.Err, errDown) {
			t.Fatalf("Err %v, want lost (unreachable) because of %v", l.Err(), errDown)
		}
		tries := eng.times(l.Owner())
		if len(tries) < 2 || !tries[0].Equal(start.Add(fakeTTL/3)) {
			t.Fatalf("renewals at %v, want the first at %v and retries after it", offsets(start, tries), fakeTTL/3)
		}
		retry := fakeTTL / 10
		for i := 1; i < len(tries); i++ {
			if gap := tries[i].Sub(tries[i-1]); gap < retry/2 || gap >= retry*3/2 {
				t.Fatalf("renewals at %v: a retry after %v, want a jittered %v", offsets(start, tries), gap, retry)
			}
		}
	})
}

// TestFakeClockLossWhenTaken: a lease whose lock another owner took is lost
// (taken over) at its next renewal tick, the moment the engine says so.
func TestFakeClockLossWhenTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng, l, start := watched(t, "taken")
		ctx := context.Background()
		if _, err := eng.ForceRelease(ctx, "taken"); err != nil {
			t.Fatal(err)
		}
		if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "taken", Owner: "other", TTL: time.Hour}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
		lostBy(t, l, l.Deadline().Add(fakeTTL))
		if got, want := time.Since(start), fakeTTL/3; got != want {
			t.Fatalf("lost %v after the grant, want at the first renewal tick %v", got, want)
		}
		var lost *distlock.LostError
		if !errors.As(l.Err(), &lost) || lost.Cause != distlock.TakenOver {
			t.Fatalf("Err %v, want lost (taken over)", l.Err())
		}
	})
}

// TestFakeClockWaitUntilHolderExpires: a waiter whose holder dies without
// releasing is granted the lock the moment the holder's lease runs out on
// the engine: it sleeps until then, and no longer. (The holder's ttl is no
// multiple of the waiter's heartbeat interval, so that it is the wait
// loop's sleep, not a heartbeat, that wakes the waiter.)
func TestFakeClockWaitUntilHolderExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		start := time.Now()
		// The holder: granted on the engine, then never renewed (its
		// process died).
		const holderTTL = 2500 * time.Millisecond
		if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "dead", Owner: "dead-holder", TTL: holderTTL}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*fakeTTL) // fake time: fails a waiter that never wakes
		defer cancel()
		l, err := c.Acquire(wctx, "dead", distlock.WithTTL(fakeTTL))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		if got := time.Since(start); got != holderTTL {
			t.Fatalf("granted %v after the holder's grant, want when its ttl ran out (%v)", got, holderTTL)
		}
	})
}

// TestFakeClockWaiterHeartbeats: a waiter queued behind a live holder
// renews its queue entry every WaiterTTL/3 (from its first attempt) while
// it waits, and is granted the lock at the instant of the release that
// wakes it, without polling.
func TestFakeClockWaiterHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := newExtendLog()
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		holder, err := c.Acquire(ctx, "queue", distlock.WithTTL(time.Hour), distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		queued := time.Now()
		wctx, cancel := context.WithTimeout(ctx, time.Hour) // fake time: fails a waiter that never wakes
		defer cancel()
		type result struct {
			l   *distlock.Lease
			err error
		}
		got := make(chan result, 1) // the test may end before the waiter
		go func() {
			l, err := c.Acquire(wctx, "queue", distlock.WithTTL(fakeTTL), distlock.WithAutoRenew(false))
			got <- result{l, err}
		}()
		const beats = 5
		time.Sleep(beats*distlock.WaiterTTL/3 + distlock.WaiterTTL/6)
		synctest.Wait()
		var waiter string
		var at []time.Time
		eng.mu.Lock()
		for _, call := range eng.calls {
			for _, r := range call.reqs {
				if r.Waiter && r.Name == "queue" {
					waiter = r.Owner
					at = append(at, call.at)
				}
			}
		}
		eng.mu.Unlock()
		if len(at) != beats {
			t.Fatalf("%d heartbeats in %v: at %v, want %d", len(at), time.Since(queued), offsets(queued, at), beats)
		}
		for i, a := range at {
			if want := queued.Add(time.Duration(i+1) * distlock.WaiterTTL / 3); !a.Equal(want) {
				t.Fatalf("heartbeats of %s at %v, want every %v", waiter, offsets(queued, at), distlock.WaiterTTL/3)
			}
		}
		released := time.Now()
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		l := r.l
		defer l.Release(ctx)
		if lag := l.Deadline().Sub(validity(released, fakeTTL)); lag != 0 {
			t.Fatalf("the waiter's grant was sent %v after the release, want at once (woken, not polling)", lag)
		}
	})
}
