package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// TestKindsApart: while readers of a reader-writer lock or permits of a
// semaphore hold a name, a mutex is refused on it (Acquire, TryAcquire,
// and the engine's Acquire with a waiter), and while a mutex holds it the
// shared locks are refused, each with the memory engine's error word for
// word (an *ArgumentError); a refusal changes nothing (no lease, no
// waiter, the holders as they were). Once the holders are gone, the other
// kind is granted, with a token above theirs.
func TestKindsApart(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pgEng := newEngine(t, newPool(t), schema)
	pg := distlock.New(pgEng)
	defer pg.Close()
	memEng := memory.New()
	mem := distlock.New(memEng)
	defer mem.Close()

	// A kind's call, on a Client of either engine.
	type kind struct {
		what string
		take func(c *distlock.Client, name string) (*distlock.Lease, error)
	}
	wait := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, 10*time.Second) // a refusal returns at once
	}
	mutex := []kind{
		{"TryAcquire", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.TryAcquire(ctx, name, distlock.WithTTL(time.Minute))
		}},
		{"Acquire", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			ctx, cancel := wait(ctx)
			defer cancel()
			return c.Acquire(ctx, name, distlock.WithTTL(time.Minute))
		}},
	}
	shared := []kind{
		{"TryAcquire of a semaphore", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.Semaphore(name, 3).TryAcquire(ctx, distlock.WithTTL(time.Minute))
		}},
		{"TryRLock", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.RWMutex(name).TryRLock(ctx, distlock.WithTTL(time.Minute))
		}},
		{"Lock of an RWMutex", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			ctx, cancel := wait(ctx)
			defer cancel()
			return c.RWMutex(name).Lock(ctx, distlock.WithTTL(time.Minute))
		}},
		{"Acquire of a semaphore", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			ctx, cancel := wait(ctx)
			defer cancel()
			return c.Semaphore(name, 3).Acquire(ctx, distlock.WithTTL(time.Minute))
		}},
	}
	cases := []struct {
		holders []kind // taken in order, on one name
		refused []kind
	}{
		{shared[:1], mutex},                   // a permit, then a mutex
		{[]kind{shared[0], shared[0]}, mutex}, // two permits
		{[]kind{shared[1], shared[1]}, mutex}, // two readers
		{shared[2:3], mutex},                  // a writer
		{mutex[:1], shared},                   // a mutex, then the shared kinds
	}
	for _, tc := range cases {
		name := uniqueName(t)
		t.Run(tc.holders[0].what+" then "+tc.refused[0].what, func(t *testing.T) {
			var held []*distlock.Lease
			for _, h := range tc.holders {
				l, err := h.take(pg, name)
				if err != nil {
					t.Fatalf("%s: %v", h.what, err)
				}
				held = append(held, l)
				if ml, err := h.take(mem, name); err != nil {
					t.Fatalf("memory: %s: %v", h.what, err)
				} else {
					defer func() { _ = ml.Release(ctx) }()
				}
			}
			before := state(t, ctx, pgEng, name)
			for _, r := range tc.refused {
				l, err := r.take(pg, name)
				_, want := r.take(mem, name)
				var ae *distlock.ArgumentError
				if l != nil || !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) || want == nil || err.Error() != want.Error() {
					if l != nil {
						_ = l.Release(ctx)
					}
					t.Fatalf("%s while %s holds: granted %t, %v; want memory's %v", r.what, tc.holders[0].what, l != nil, err, want)
				}
				if after := state(t, ctx, pgEng, name); after != before {
					t.Fatalf("the refused %s changed\n%s\nto\n%s", r.what, before, after)
				}
			}
			// The engine's call with a waiter: refused, and not queued.
			if tc.refused[0].what == "TryAcquire" {
				r := engine.AcquireRequest{Name: name, Owner: "w", Attempt: "w", TTL: time.Minute,
					Waiting: true, Waiter: "w", WaiterTTL: time.Minute}
				_, err := pgEng.Acquire(ctx, r)
				_, want := memEng.Acquire(ctx, r)
				var ae *engine.ArgumentError
				if !errors.As(err, &ae) || want == nil || err.Error() != want.Error() {
					t.Fatalf("the engine's Acquire with a waiter: %v; want memory's %v", err, want)
				}
				if after := state(t, ctx, pgEng, name); after != before {
					t.Fatalf("the refused waiter changed\n%s\nto\n%s", before, after)
				}
			}
			top := uint64(0)
			for _, l := range held {
				top = max(top, l.Token())
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			l, err := tc.refused[0].take(pg, name)
			if err != nil || l.Token() <= top {
				t.Fatalf("%s once the holders left: %v, %v (tokens up to %d)", tc.refused[0].what, l, err, top)
			}
			_ = l.Release(ctx)
		})
	}
}

// state describes everything the engine keeps for name: its mutex lease
// and waiters, and its shared lock's holders and waiters.
func state(t *testing.T, ctx context.Context, e interface {
	engine.Engine
	engine.Sharer
}, name string) string {
	t.Helper()
	all, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, shared := all.MutexView(), all.SharedView()
	for i := range shared.Holders {
		shared.Holders[i].TTL = 0 // runs down
	}
	info.TTL = 0
	return fmt.Sprintf("mutex %+v\nshared %+v", info, shared)
}

// TestKindsNoWriteSkew: a permit's grant that passed its kind check and
// stalls before it commits (a trigger holds its holder row's insert) keeps
// a mutex's grant of the name from passing its own check meanwhile: the
// mutex waits for it, then is refused as memory refuses it. (Were the two
// checks not made under one row lock, each would read the other's table
// before the other committed, and both would be granted.)
func TestKindsNoWriteSkew(t *testing.T) {
	const schema = "stall"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	installStall(t, ctx, newPool(t), schema, "AFTER INSERT ON shared_holders")
	for _, fresh := range []bool{true, false} { // the name's rows made by the permit's grant, or there before
		name := uniqueName(t)
		if !fresh {
			e := newEngine(t, newPool(t), schema)
			r := engine.AcquireRequest{Name: name, Owner: "before", Attempt: "before", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1}
			if _, err := e.Acquire(ctx, r); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "before", Kind: engine.Semaphore}); err != nil {
				t.Fatal(err)
			}
		}
		letGo := holdStall(t, ctx)
		permitApp, mutexApp := "permit-"+name, "mutex-"+name
		permit := newEngine(t, newPool(t, stallParams(permitApp)...), schema)
		mutex := newEngine(t, newPool(t, "application_name="+mutexApp), schema)
		type result struct {
			g   engine.Grant
			err error
		}
		permitDone, mutexDone := make(chan result, 1), make(chan result, 1)
		go func() {
			g, err := permit.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "p", Attempt: "p", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1})
			permitDone <- result{g, err}
		}()
		waitLocked(t, ctx, permitApp, 1) // checked, its holder row inserted, not committed
		go func() {
			g, err := mutex.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "m", Attempt: "m", TTL: time.Minute})
			mutexDone <- result{g, err}
		}()
		// The mutex's grant either ends (it passed its check) or waits.
		var m result
		ended := false
		for deadline := time.Now().Add(10 * time.Second); !ended && lockWaiters(t, ctx, mutexApp) == 0; {
			select {
			case m = <-mutexDone:
				ended = true
			case <-time.After(5 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatal("the mutex's grant neither ended nor waited")
				}
			}
		}
		letGo()
		p := <-permitDone
		if !ended {
			m = <-mutexDone
		}
		if p.err != nil || !p.g.Acquired {
			t.Fatalf("fresh %t: the stalled permit: %+v, %v", fresh, p.g, p.err)
		}
		var ae *engine.ArgumentError
		if m.g.Acquired || !errors.As(m.err, &ae) || m.err.Error() != engine.KindError(name, engine.Semaphore, 0).Error() {
			t.Errorf("fresh %t: a mutex beside the permit: %+v, %v", fresh, m.g, m.err)
		}
	}
}
