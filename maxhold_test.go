package distlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/internal/redistest"
)

// maxHold is the tests' maximum hold time: several renewals of a fakeTTL
// lease, and not a multiple of the renewal interval.
const maxHold = 10*time.Second + 500*time.Millisecond

// TestFakeClockMaxHold: a renewed lease with WithMaxHold is lost exactly
// at its hold limit (grant sent + d), with the cause MaxHoldExceeded that
// Err, Context's cause and the Observer report; the Client released it in
// the engine, so a waiter of another Client is granted the lock at that
// instant; a later Release sends nothing.
func TestFakeClockMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		eng := newExtendLog()
		c := distlock.New(eng, distlock.WithObserver(&rec))
		defer c.Close()
		other := distlock.New(eng)
		defer other.Close()
		ctx := context.Background()
		start := time.Now()
		l, err := c.Acquire(ctx, "capped", distlock.WithTTL(fakeTTL), distlock.WithMaxHold(maxHold))
		if err != nil {
			t.Fatal(err)
		}
		limit := start.Add(maxHold)
		if !l.HoldLimit().Equal(limit) {
			t.Fatalf("HoldLimit %v after the send, want %v", l.HoldLimit().Sub(start), maxHold)
		}
		lctx := l.Context()
		wctx, cancel := context.WithTimeout(ctx, 10*maxHold) // fake time: fails a waiter that never wakes
		defer cancel()
		waiter, err := other.Acquire(wctx, "capped", distlock.WithTTL(fakeTTL))
		if err != nil {
			t.Fatal(err)
		}
		defer waiter.Release(ctx)
		if now := time.Now(); !now.Equal(limit) {
			t.Fatalf("the waiter was granted %v after the grant, want at the hold limit %v", now.Sub(start), maxHold)
		}
		synctest.Wait()
		select {
		case <-l.Done():
		default:
			t.Fatal("Done not closed at the hold limit")
		}
		var lost *distlock.LostError
		if err := l.Err(); !errors.As(err, &lost) || lost.Cause != distlock.MaxHoldExceeded || !lost.At.Equal(limit) ||
			!errors.Is(err, distlock.ErrMaxHoldExceeded) || !errors.Is(err, distlock.ErrLeaseLost) {
			t.Fatalf("Err %v, want lost (max hold) at the limit, matching ErrMaxHoldExceeded and ErrLeaseLost", err)
		}
		if !errors.Is(context.Cause(lctx), distlock.ErrMaxHoldExceeded) {
			t.Fatalf("Context's cause %v, want ErrMaxHoldExceeded", context.Cause(lctx))
		}
		if renewals := len(eng.times(l.Owner())); renewals < 3 {
			t.Fatalf("%d renewals before the limit, want the watchdog to have renewed it all along", renewals)
		}
		rec.mu.Lock()
		lostCnt, cause := rec.lostCnt, rec.lostCause
		rec.mu.Unlock()
		if lostCnt != 1 || cause != distlock.MaxHoldExceeded {
			t.Fatalf("Observer heard %d losses (last %v), want one, MaxHoldExceeded", lostCnt, cause)
		}
		if err := l.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
			t.Fatalf("Release after the limit: %v, want ErrNotHeld", err)
		}
		if info, err := eng.Inspect(ctx, "capped"); err != nil || info.Owner != waiter.Owner() {
			t.Fatalf("after the first lease's Release: %+v %v, want the waiter holding it", info, err)
		}
	})
}

// TestFakeClockMaxHoldReentry: with re-entry, each lease keeps its own
// limit; the inner lease's end drops its own hold only, and its later
// Release sends nothing, so the outer lease still holds the lock. (The
// mutant that releases again on Release drops the outer hold: seen to
// fail.)
func TestFakeClockMaxHoldReentry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		own := distlock.WithOwner("job-7")
		outer, err := c.Acquire(ctx, "nested", own, distlock.WithTTL(fakeTTL))
		if err != nil {
			t.Fatal(err)
		}
		inner, err := c.Acquire(ctx, "nested", own, distlock.WithTTL(fakeTTL), distlock.WithMaxHold(maxHold))
		if err != nil {
			t.Fatal(err)
		}
		lostBy(t, inner, inner.HoldLimit().Add(time.Second))
		synctest.Wait()
		if !errors.Is(inner.Err(), distlock.ErrMaxHoldExceeded) {
			t.Fatalf("inner Err %v, want ErrMaxHoldExceeded", inner.Err())
		}
		if err := inner.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
			t.Fatalf("inner Release after its limit: %v, want ErrNotHeld", err)
		}
		if info, err := eng.Inspect(ctx, "nested"); err != nil || !info.Held || info.Count != 1 || outer.Err() != nil {
			t.Fatalf("after the inner lease's end: %+v %v (outer %v), want the outer hold kept", info, err, outer.Err())
		}
		if err := outer.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if info, err := eng.Inspect(ctx, "nested"); err != nil || info.Held {
			t.Fatalf("after the outer Release: %+v %v, want free", info, err)
		}
	})
}

// TestFakeClockMaxHoldTermLimit: a leadership with WithMaxHold is a term
// limit: the leader steps down at the limit, and the next campaigner is
// elected then, with a greater term.
func TestFakeClockMaxHoldTermLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		a, b := distlock.New(eng), distlock.New(eng)
		defer a.Close()
		defer b.Close()
		ctx := context.Background()
		first, err := a.Campaign(ctx, "leader", "a", distlock.WithTTL(fakeTTL), distlock.WithMaxHold(maxHold))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*maxHold)
		defer cancel()
		next, err := b.Campaign(wctx, "leader", "b", distlock.WithTTL(fakeTTL))
		if err != nil {
			t.Fatal(err)
		}
		defer next.Resign(ctx)
		if now := time.Now(); !now.Equal(first.Lease().HoldLimit()) || next.Term() <= first.Term() {
			t.Fatalf("b elected at %v (term %d), want at a's limit %v with a term above %d", now, next.Term(), first.Lease().HoldLimit(), first.Term())
		}
		if !errors.Is(first.Err(), distlock.ErrMaxHoldExceeded) {
			t.Fatalf("the first leadership's Err %v, want ErrMaxHoldExceeded", first.Err())
		}
	})
}

// TestMaxHoldInvalid: a maximum hold time below MinTTL is refused with an
// *ArgumentError, and nothing is held.
func TestMaxHoldInvalid(t *testing.T) {
	eng := memory.New()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	for _, d := range []time.Duration{0, -time.Second, distlock.MinTTL - 1} {
		l, err := c.Acquire(ctx, "bad", distlock.WithMaxHold(d))
		var ae *distlock.ArgumentError
		if l != nil || !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("WithMaxHold(%v): %v %v, want an *ArgumentError", d, l, err)
		}
	}
	if info, err := eng.Inspect(ctx, "bad"); err != nil || info.Held {
		t.Fatalf("after the refusals: %+v %v, want nothing held", info, err)
	}
}

// TestMaxHoldReleasesOnRedis: on Redis, a lease (a mutex, and one permit of
// a semaphore of two) that reaches its maximum hold time is released in
// Redis, so a waiter of another Client is granted it long before the
// hold's one-minute ttl could run out. (With the release left out, the
// waiters' budget ran out: seen to fail.)
func TestMaxHoldReleasesOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	a, b := redisClient(t, srv), redisClient(t, srv)
	ctx := context.Background()
	capped := []distlock.Option{distlock.WithTTL(time.Minute), distlock.WithMaxHold(200 * time.Millisecond)}
	// The waiters' budget: far below the holds' ttl, far above the limit.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()

	l, err := a.Acquire(ctx, "capped", capped...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Acquire(wctx, "capped")
	if err != nil {
		t.Fatalf("waiter: %v (the capped lease: %v)", err, l.Err())
	}
	defer got.Release(ctx)
	if !errors.Is(l.Err(), distlock.ErrMaxHoldExceeded) {
		t.Fatalf("the capped lease's Err %v, want ErrMaxHoldExceeded", l.Err())
	}

	sa, sb := a.Semaphore("pool", 2), b.Semaphore("pool", 2)
	keep, err := sa.Acquire(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Release(ctx)
	p, err := sa.Acquire(ctx, capped...)
	if err != nil {
		t.Fatal(err)
	}
	q, err := sb.Acquire(wctx)
	if err != nil {
		t.Fatalf("semaphore waiter: %v (the capped permit: %v)", err, p.Err())
	}
	defer q.Release(ctx)
	if keep.Err() != nil || !errors.Is(p.Err(), distlock.ErrMaxHoldExceeded) {
		t.Fatalf("the uncapped permit: %v, the capped one: %v; want the first held, the second ended by its limit", keep.Err(), p.Err())
	}
}
