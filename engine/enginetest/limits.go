package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// The limit of a semaphore: the first declaration makes it, the stored
// limit governs after that, and a client that declares another limit is
// served under the stored one, never refused; weight 0 is refused.

// semaphoreLimitStored: a handle that declares another limit than the
// stored one is served under the stored limit (a request that would fit
// under its own is refused as busy, one above the stored limit as bad
// input), and Inspect reports the stored limit. SetLimit changes it,
// shrinking evicts nobody, and handles of the old limit keep working.
// Bad limits and weights are refused and change nothing.
func (s *suite) semaphoreLimitStored(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	c := s.client(t)
	h, err := c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	five := s.client(t).Semaphore(name, 5) // not redeployed: declares 5
	if _, err := five.TryAcquire(ctx, distlock.WithWeight(2)); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("2 permits under a declared limit 5, stored 3 with 2 held: %v, want ErrLocked", err)
	}
	one, err := five.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("a free permit under a declared limit 5, stored 3: %v, want a grant", err)
	}
	before, err := c.Semaphore(name, 3).Inspect(ctx)
	if err != nil || before.Limit != 3 || len(before.Holders) != 2 {
		t.Fatalf("Inspect: %+v, %v, want the stored limit 3 and 2 holders", before, err)
	}
	for _, tc := range []struct {
		what string
		call func() error
	}{
		{"limit 0", func() error { _, err := c.Semaphore(name, 0).TryAcquire(ctx); return err }},
		{"weight 0", func() error { _, err := c.Semaphore(name, 3).TryAcquire(ctx, distlock.WithWeight(0)); return err }},
		{"weight -1", func() error { _, err := c.Semaphore(name, 3).TryAcquire(ctx, distlock.WithWeight(-1)); return err }},
		{"weight above the limit", func() error { _, err := c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(4)); return err }},
		{"weight above the stored limit", func() error { _, err := five.Acquire(ctx, distlock.WithWeight(4)); return err }},
		{"weight on a mutex", func() error { _, err := c.TryAcquire(ctx, name+"-m", distlock.WithWeight(2)); return err }},
		{"weight 0 on a mutex", func() error { _, err := c.TryAcquire(ctx, name+"-m", distlock.WithWeight(0)); return err }},
		{"weight on an RWMutex", func() error { _, err := c.RWMutex(name+"-rw").TryRLock(ctx, distlock.WithWeight(2)); return err }},
		{"SetLimit 0", func() error { return c.Semaphore(name, 3).SetLimit(ctx, 0) }},
	} {
		if err := tc.call(); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.what, err)
		}
	}
	if after, _ := c.Semaphore(name, 3).Inspect(ctx); after.Limit != 3 || len(after.Holders) != len(before.Holders) {
		t.Fatalf("bad input changed the semaphore: %+v -> %+v", before, after)
	}
	sem := c.Semaphore(name, 3)
	if err := sem.SetLimit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	info, _ := sem.Inspect(ctx)
	if info.Limit != 1 || len(info.Holders) != 2 || h.Err() != nil || one.Err() != nil {
		t.Fatalf("shrinking evicted a holder: %+v, %v, %v", info, h.Err(), one.Err())
	}
	if _, err := sem.TryAcquire(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("a permit granted above the shrunk limit: %v", err)
	}
	if _, err := c.Semaphore(name, 3).TryAcquire(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("the old limit after SetLimit: %v, want ErrLocked (served under the stored limit)", err)
	}
	_ = h.Release(ctx)
	_ = one.Release(ctx)
	l, err := five.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("a free permit under the stored limit 1, declared 5: %v", err)
	}
	_ = l.Release(ctx)
}

// semaphoreWaiterSurvivesSetLimit: a waiter queued under one limit is
// served under the one another Client sets: SetLimit wakes it when it fits
// and its handle, still declaring the old limit, is granted, not refused.
// A waiter that declares another limit than the stored one queues and is
// granted in its turn.
func (s *suite) semaphoreWaiterSurvivesSetLimit(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	a, b, admin := s.client(t), s.client(t), s.client(t)
	full, err := a.Semaphore(name, 2).Acquire(ctx, distlock.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	waiting := func(c *distlock.Client, limit int) chan *distlock.Lease {
		got := make(chan *distlock.Lease, 1)
		go func() {
			l, err := c.Semaphore(name, limit).Acquire(ctx)
			if err != nil {
				t.Errorf("the waiter declaring limit %d: %v, want a grant", limit, err)
			}
			got <- l
		}()
		return got
	}
	queued := func(n int) {
		WaitFor(t, 20*time.Second, "the waiter to queue", func() bool {
			info, err := admin.Semaphore(name, 2).Inspect(ctx)
			return err == nil && info.Waiters == n
		})
	}
	first := waiting(b, 2)
	queued(1)
	if err := admin.Semaphore(name, 3).SetLimit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	l := <-first
	if l == nil {
		t.FailNow()
	}
	if full.Err() != nil {
		t.Fatalf("the holder lost its permits: %v", full.Err())
	}
	// Shrunk to 1 while full: a waiter declaring 3 queues, and is granted
	// once the permits held fit under 1 again.
	if err := admin.Semaphore(name, 3).SetLimit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	second := waiting(s.client(t), 3)
	queued(1)
	_ = l.Release(ctx)
	_ = full.Release(ctx)
	if l := <-second; l != nil {
		info, _ := admin.Semaphore(name, 1).Inspect(ctx)
		if info.Limit != 1 || len(info.Holders) != 1 {
			t.Errorf("Inspect after the grant: %+v, want limit 1 and one holder", info)
		}
		_ = l.Release(ctx)
	}
}

// semaphoreShrinkUnderWaiter: a waiter queued for more permits than a
// SetLimit then leaves can never be granted: it is refused as bad input
// (its weight above the stored limit) at once, while the permit held is
// still held, and the waiter behind it, which fits, is granted then, not
// kept behind a head that waits forever. Before: the embedded engine and
// Redis woke a head only when it fitted, so it waited until its context
// ended, and everyone behind it too.
func (s *suite) semaphoreShrinkUnderWaiter(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	a, admin := s.client(t), s.client(t)
	held, err := a.Semaphore(name, 3).Acquire(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	queued := func(n int) {
		WaitFor(t, 20*time.Second, "the waiters to queue", func() bool {
			info, err := admin.Semaphore(name, 3).Inspect(ctx)
			return err == nil && info.Waiters == n
		})
	}
	big := make(chan error, 1)
	go func() {
		l, err := s.client(t).Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(3))
		if err == nil {
			_ = l.Release(ctx)
		}
		big <- err
	}()
	queued(1)
	small := make(chan *distlock.Lease, 1)
	go func() {
		l, err := s.client(t).Semaphore(name, 3).Acquire(ctx)
		if err != nil {
			t.Errorf("the waiter for 1 permit behind the big one: %v, want a grant", err)
		}
		small <- l
	}()
	queued(2)
	if err := admin.Semaphore(name, 3).SetLimit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := <-big; !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("the waiter for 3 permits under a limit shrunk to 2: %v, want ErrInvalidArgument", err)
	}
	l := <-small
	if l == nil {
		t.FailNow()
	}
	if held.Err() != nil {
		t.Fatalf("the holder lost its permit: %v", held.Err())
	}
	_ = l.Release(ctx)
	_ = held.Release(ctx)
}

// semaphoreWeightZero: a request for 0 permits is refused as bad input,
// through the Client (WithWeight(0): x/sync's Acquire(ctx, 0) would take
// nothing; distlock's grants hold at least one permit) and by the engine
// itself (an *engine.ArgumentError), and it makes nothing.
func (s *suite) semaphoreWeightZero(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	c := s.client(t)
	sem := c.Semaphore(name, 1)
	if _, err := sem.TryAcquire(ctx, distlock.WithWeight(0)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("TryAcquire with weight 0: %v, want ErrInvalidArgument", err)
	}
	if _, err := sem.Acquire(ctx, distlock.WithWeight(0)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("Acquire with weight 0: %v, want ErrInvalidArgument", err)
	}
	e := s.h.New(t)
	_, err := e.Acquire(ctx, engine.AcquireRequest{
		Name: name, Owner: "weight-zero", TTL: 5 * time.Second, Attempt: "a1",
		Kind: engine.Semaphore, Limit: 1, Weight: 0,
	})
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) || ae.Arg != "weight" {
		t.Errorf("Acquire with weight 0: %v, want an *engine.ArgumentError about the weight", err)
	}
	if info, err := sem.Inspect(ctx); err != nil || info.Kind != 0 || info.Held {
		t.Fatalf("weight 0 changed something: %+v, %v", info, err)
	}
}

// semaphoreSetLimitUnsupported: where the engine cannot keep a limit above
// 1 (a quorum), SetLimit and Acquire with one answer an
// *UnsupportedError (errors.ErrUnsupported), never a *BackendError that
// looks worth retrying, and change nothing.
func (s *suite) semaphoreSetLimitUnsupported(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	if _, err := s.h.New(t).(engine.Sharer).SetLimit(ctx, name+"-probe", 2); !errors.Is(err, errors.ErrUnsupported) {
		t.Skip("the engine keeps semaphores with a limit above 1")
	}
	c := s.client(t)
	for what, call := range map[string]func(context.Context) error{
		"SetLimit 2": func(ctx context.Context) error { return c.Semaphore(name, 1).SetLimit(ctx, 2) },
		"TryAcquire with limit 2": func(ctx context.Context) error {
			_, err := c.Semaphore(name, 2).TryAcquire(ctx)
			return err
		},
	} {
		err := call(ctx)
		var ue *distlock.UnsupportedError
		var be *distlock.BackendError
		if !errors.As(err, &ue) || !errors.Is(err, errors.ErrUnsupported) || errors.As(err, &be) {
			t.Errorf("%s: %v (%T), want an *UnsupportedError", what, err, err)
		}
	}
	if info, err := c.Semaphore(name, 1).Inspect(ctx); err != nil || info.Kind != 0 {
		t.Fatalf("the refusals changed something: %+v, %v", info, err)
	}
}
