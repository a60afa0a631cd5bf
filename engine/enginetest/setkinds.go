package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// setKindBeforeContention: a set one of whose names is held as a shared
// lock (a semaphore's permit, an RWMutex's reader) is refused with that
// name's kind error at once, even when a name sorted before it is a mutex
// held by another owner: a kind error is never contention, so neither
// TryAcquireAll ("locked") nor a waiting AcquireAll (queued behind the
// mutex until its context ends) may answer it so. Nothing changes: the
// free name sorted first stays free with its high-water, the held mutex
// gets no waiter.
func (s *suite) setKindBeforeContention(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 60*time.Second)
	holder, c := s.client(t), s.client(t)
	p := lockName(t) + "/"
	free, mutex, sem, rw := p+"a", p+"b", p+"c", p+"d"
	m, err := holder.Acquire(ctx, mutex)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Release(ctx) }()
	sl, err := holder.Semaphore(sem, 1).Acquire(ctx) // limit 1: a quorum keeps no other
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sl.Release(ctx) }()
	rl, err := holder.RWMutex(rw).RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rl.Release(ctx) }()
	for _, other := range []struct {
		name string
		kind engine.Kind
	}{{sem, engine.Semaphore}, {rw, engine.RWLock}} {
		names := []string{free, mutex, other.name}
		want := engine.KindError(other.name, other.kind, engine.Mutex).(*engine.ArgumentError).Reason
		before := inspectAll(t, ctx, holder, names)
		for _, p := range []struct {
			how     string
			acquire func(ctx context.Context) (*distlock.LeaseSet, error)
		}{
			{"TryAcquireAll", func(ctx context.Context) (*distlock.LeaseSet, error) { return c.TryAcquireAll(ctx, names) }},
			// Bounded far beyond any machine's need: the refusal must come
			// from the kind check, not from the context.
			{"AcquireAll", func(ctx context.Context) (*distlock.LeaseSet, error) {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				return c.AcquireAll(ctx, names)
			}},
		} {
			set, err := p.acquire(ctx)
			if set != nil {
				_ = set.Release(ctx)
				t.Fatalf("%s(%v): granted beside a %s's holder", p.how, names, other.kind)
			}
			var ae *distlock.ArgumentError
			if !errors.As(err, &ae) || ae.Reason != want {
				t.Fatalf("%s(%v): %v; want at once the kind error %q", p.how, names, err, want)
			}
			after := inspectAll(t, ctx, holder, names)
			for i, n := range names {
				a, b := after[i], before[i]
				if a.Held != b.Held || a.Token != b.Token || a.HighWater != b.HighWater || a.Waiters != b.Waiters {
					t.Fatalf("%s(%v) changed %q: %+v, was %+v", p.how, names, n, a, b)
				}
			}
		}
	}
}

// inspectAll inspects each of names through c.
func inspectAll(t *testing.T, ctx context.Context, c *distlock.Client, names []string) []distlock.Info {
	t.Helper()
	out := make([]distlock.Info, len(names))
	for i, n := range names {
		info, err := c.Inspect(ctx, n)
		if err != nil {
			t.Fatalf("Inspect(%q): %v", n, err)
		}
		out[i] = info
	}
	return out
}
