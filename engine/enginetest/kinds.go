package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// lockKind is one way of taking a name: a mutex, an election (a mutex whose
// grant announces a leader), a semaphore, or a side of a reader-writer lock.
type lockKind struct {
	name string
	// is is the kind the engines report in their refusals
	// (engine.KindError): 0 for a mutex and an election.
	is engine.Kind
	// shared: the kind needs an engine.Sharer; semaphore: one that keeps
	// semaphores with a limit above 1 (a quorum keeps none); waits: take
	// always waits (Campaign).
	shared, semaphore, waits bool
	// take asks for the name on c: one attempt, or waiting until ctx ends.
	take func(ctx context.Context, c *distlock.Client, name string, wait bool) (*distlock.Lease, error)
}

// kindSemLimit is the semaphores' limit: above 1, so that a semaphore is
// not a mutex by another name.
const kindSemLimit = 2

var lockKinds = []lockKind{
	{name: "mutex", take: func(ctx context.Context, c *distlock.Client, name string, wait bool) (*distlock.Lease, error) {
		if wait {
			return c.Acquire(ctx, name)
		}
		return c.TryAcquire(ctx, name)
	}},
	{name: "election", waits: true, take: func(ctx context.Context, c *distlock.Client, name string, _ bool) (*distlock.Lease, error) {
		l, err := c.Campaign(ctx, name, "leader") // Campaign always waits
		if err != nil {
			return nil, err
		}
		return l.Lease(), nil
	}},
	{name: "semaphore", is: engine.Semaphore, shared: true, semaphore: true, take: func(ctx context.Context, c *distlock.Client, name string, wait bool) (*distlock.Lease, error) {
		if wait {
			return c.Semaphore(name, kindSemLimit).Acquire(ctx)
		}
		return c.Semaphore(name, kindSemLimit).TryAcquire(ctx)
	}},
	{name: "rw-read", is: engine.RWLock, shared: true, take: func(ctx context.Context, c *distlock.Client, name string, wait bool) (*distlock.Lease, error) {
		if wait {
			return c.RWMutex(name).RLock(ctx)
		}
		return c.RWMutex(name).TryRLock(ctx)
	}},
	{name: "rw-write", is: engine.RWLock, shared: true, take: func(ctx context.Context, c *distlock.Client, name string, wait bool) (*distlock.Lease, error) {
		if wait {
			return c.RWMutex(name).Lock(ctx)
		}
		return c.RWMutex(name).TryLock(ctx)
	}},
}

// kindsRefused: a name held as one kind refuses every other kind, in both
// orders, as an argument error (the same *ArgumentError, word for word, on
// every engine: engine.KindError), never as contention and never as a
// grant, to TryAcquire and to a waiting Acquire alike; the refusal changes
// nothing (the same holders and waiters, the holder still extends and
// releases). Once the holder released, a mutex (or election) and a shared
// lock take the name from each other, with a greater token; a shared
// lock's kind stays stored with the name, so the other shared kind is
// still refused.
func (s *suite) kindsRefused(t *testing.T) {
	for _, first := range lockKinds {
		for _, second := range lockKinds {
			if first.is == second.is {
				continue // one kind: contention, not a refusal
			}
			t.Run(first.name+"/"+second.name, func(t *testing.T) {
				for _, k := range []lockKind{first, second} {
					switch {
					case k.semaphore:
						s.semaphores(t)
					case k.shared:
						s.sharer(t)
					}
				}
				s.kindRefused(t, first, second)
			})
		}
	}
}

// kindRefused holds name as first and asks for it as second.
func (s *suite) kindRefused(t *testing.T, first, second lockKind) {
	ctx := ctxTimeout(t, 60*time.Second)
	name := lockName(t)
	holder, other := s.client(t), s.client(t)
	held, err := first.take(ctx, holder, name, true)
	if err != nil {
		t.Fatalf("%s: %v", first.name, err)
	}
	before := s.kindState(t, ctx, holder, name, nil)
	want := engine.KindError(name, first.is, second.is).(*engine.ArgumentError).Reason
	for _, wait := range []bool{false, true} {
		if !wait && second.waits {
			continue
		}
		what := fmt.Sprintf("%s of a name held as a %s (waiting %v)", second.name, first.name, wait)
		// A waiting call returns at once: trying again cannot help.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := second.take(wctx, other, name, wait)
		cancel()
		if l != nil {
			_ = l.Release(ctx)
			t.Fatalf("%s: granted (token %d)", what, l.Token())
		}
		var ae *distlock.ArgumentError
		if !errors.Is(err, distlock.ErrInvalidArgument) || !errors.As(err, &ae) || errors.Is(err, distlock.ErrLocked) {
			t.Fatalf("%s: %v, want an *ArgumentError", what, err)
		}
		if ae.Arg != "name" || ae.Reason != want {
			t.Fatalf("%s: %s %q, want name %q", what, ae.Arg, ae.Reason, want)
		}
	}
	s.kindState(t, ctx, holder, name, &before)
	if err := held.Extend(ctx, held.TTL()); err != nil {
		t.Fatalf("the %s holder's extension after the refusals: %v", first.name, err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("the %s holder's release after the refusals: %v", first.name, err)
	}
	if first.shared && second.shared {
		// A shared lock's kind is stored with the name: released, it is
		// still refused (as a semaphore's limit is).
		_, err := second.take(ctx, other, name, false)
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) || ae.Reason != want {
			t.Fatalf("%s of a released %s: %v, want the stored kind refused (%q)", second.name, first.name, err, want)
		}
		return
	}
	// Released: the name is free for the other kind, with a greater token.
	var l *distlock.Lease
	WaitFor(t, 10*time.Second, second.name+" to be granted after the release", func() bool {
		l, err = second.take(ctx, other, name, false)
		if err != nil && !errors.Is(err, distlock.ErrLocked) {
			t.Fatalf("%s after the %s was released: %v", second.name, first.name, err)
		}
		return err == nil
	})
	defer l.Release(ctx)
	if l.Token() <= held.Token() {
		t.Fatalf("%s token %d after the %s's %d", second.name, l.Token(), first.name, held.Token())
	}
}

// kindView is what Inspect reports of a name, in both views (the mutex's
// and, on an engine.Sharer, the shared lock's), without the times left.
type kindView struct {
	held, sharedHeld bool
	holders          []engine.Holder
	waiters          int
	kind             engine.Kind
	limit            int
}

// kindState reads the state of name, once two reads in a row agree (a
// quorum's stragglers land after the call that sent them returned). With
// want, it waits until the state is *want and fails the test if it does
// not come back to it.
func (s *suite) kindState(t *testing.T, ctx context.Context, c *distlock.Client, name string, want *kindView) kindView {
	t.Helper()
	_, sharer := s.h.New(t).(engine.Sharer)
	read := func() kindView {
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		v := kindView{held: info.Held, waiters: info.Waiters}
		for _, h := range info.Holders {
			v.holders = append(v.holders, engine.Holder{Owner: h.Owner, Count: h.Count, Token: h.Token, Metadata: h.Metadata})
		}
		if sharer {
			info, err := c.RWMutex(name).Inspect(ctx)
			switch {
			case errors.Is(err, errors.ErrUnsupported):
			case err != nil:
				t.Fatalf("inspect shared: %v", err)
			default:
				v.sharedHeld, v.waiters, v.kind, v.limit = info.Held, v.waiters+info.Waiters, info.Kind, info.Limit
				for _, h := range info.Holders {
					v.holders = append(v.holders, engine.Holder{Owner: h.Owner, Count: h.Count, Token: h.Token, Metadata: h.Metadata, Weight: h.Weight})
				}
			}
		}
		return v
	}
	var prev, v kindView
	first := true
	if !waitUntil(10*time.Second, func() bool {
		prev, v = v, read()
		same := !first && v.equal(prev) && (want == nil || v.equal(*want))
		first = false
		return same
	}) {
		if want != nil {
			t.Fatalf("the refusals changed %s: %+v, before %+v", name, v, *want)
		}
		t.Fatalf("the state of %s did not settle: %+v, then %+v", name, prev, v)
	}
	return v
}

func (v kindView) equal(w kindView) bool {
	return v.held == w.held && v.sharedHeld == w.sharedHeld && v.waiters == w.waiters &&
		v.kind == w.kind && v.limit == w.limit && slices.Equal(v.holders, w.holders)
}
