package enginetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// adminHeld is one lock of the administration test: its name, its holder's
// lease, and how a second Client waits for it.
type adminHeld struct {
	kind   engine.Kind
	name   string
	lease  *distlock.Lease
	weight int
	wait   func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error)
}

// adminKinds: the administration interfaces cover every kind of lock, from
// the engine's own state. With a mutex, a semaphore (2 permits of limit 3;
// skipped where semaphores above 1 are refused) and the read side of a
// reader-writer lock held on three names: List (engine.Lister) shows each
// with its kind, holders, weights, tokens and times left (what distlock
// leaks checks a shared lock's holders by), and agrees with Inspect;
// ForceRelease frees each one, wakes the waiter queued for it
// (it gets the lock before the holder's lease would have ended), and
// every holder, the mutex's too, is told its lease was taken over (a
// renewal's answer, before its deadline). Leaks (engine.LeakFinder)
// reports none of it, before or after the force-releases.
func (s *suite) adminKinds(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 60*time.Second)
	c := s.client(t)
	base := lockName(t)
	const ttl = 9 * time.Second
	held := []*adminHeld{{name: base + "-mutex", weight: 1,
		wait: func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
			return c.Acquire(ctx, base+"-mutex")
		}}}
	if _, err := s.h.New(t).(engine.Sharer).SetLimit(ctx, base+"-probe", 2); !errors.Is(err, errors.ErrUnsupported) {
		held = append(held, &adminHeld{kind: engine.Semaphore, name: base + "-sem", weight: 2,
			wait: func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
				return c.Semaphore(base+"-sem", 3).Acquire(ctx, distlock.WithWeight(2))
			}})
	}
	held = append(held, &adminHeld{kind: engine.RWLock, name: base + "-rw", weight: 1,
		wait: func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
			return c.RWMutex(base + "-rw").Lock(ctx)
		}})
	for _, h := range held {
		var err error
		switch h.kind {
		case engine.Semaphore:
			h.lease, err = c.Semaphore(h.name, 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(ttl))
		case engine.RWLock:
			h.lease, err = c.RWMutex(h.name).RLock(ctx, distlock.WithTTL(ttl))
		default:
			h.lease, err = c.Acquire(ctx, h.name, distlock.WithTTL(ttl))
		}
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
	}

	e := s.h.New(t)
	if l, ok := e.(engine.Lister); ok {
		listed := listed(t, ctx, l, base)
		for _, h := range held {
			info, ok := listed[h.name]
			if !ok {
				t.Fatalf("List does not show the %s %q (listed: %v)", h.kind, h.name, keys(listed))
			}
			checkAdminInfo(t, "List", info, h)
			checkAdminInfo(t, "Inspect", inspectKind(t, ctx, c, h), h)
		}
	}
	noLeaks(t, ctx, e, base, 2*ttl)

	for _, h := range held {
		waiter := s.client(t)
		got := make(chan error, 1)
		go func() {
			l, err := h.wait(ctx, waiter)
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		WaitFor(t, 10*time.Second, "the waiter of "+h.name, func() bool {
			return inspectKind(t, ctx, c, h).Waiters > 0
		})
		deadline := h.lease.Deadline()
		wasHeld, err := c.ForceRelease(ctx, h.name)
		if err != nil || !wasHeld {
			t.Fatalf("ForceRelease(%s %q) = %v, %v; want true", h.kind, h.name, wasHeld, err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("the waiter of %q: %v", h.name, err)
			}
		case <-time.After(time.Until(deadline)):
			t.Fatalf("force-release of the %s %q did not wake its waiter: it waited out the holder's lease", h.kind, h.name)
		}
		if info := inspectKind(t, ctx, c, h); info.Held {
			t.Errorf("%q still held after force-release and the waiter's release: %+v", h.name, info)
		}
		takenOver(t, h.lease, "the holder of the "+h.kind.String()+" "+h.name)
	}
	noLeaks(t, ctx, e, base, 2*ttl) // nor what a force-release leaves
}

// noLeaks checks that e, if it is a LeakFinder, finds no leak among the
// names starting with prefix, whose locks distlock made (with leases of at
// most maxTTL): a shared lock's own state is not a leak.
func noLeaks(t *testing.T, ctx context.Context, e engine.Engine, prefix string, maxTTL time.Duration) {
	t.Helper()
	f, ok := e.(engine.LeakFinder)
	if !ok {
		return
	}
	for cursor := ""; ; {
		leaks, next, err := f.Leaks(ctx, prefix, maxTTL, cursor, 10)
		if err != nil {
			t.Fatalf("Leaks: %v", err)
		}
		if len(leaks) > 0 {
			t.Fatalf("Leaks reports distlock's own locks as leaked: %+v", leaks)
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

// listed pages through l's listing of the names starting with prefix.
func listed(t *testing.T, ctx context.Context, l engine.Lister, prefix string) map[string]engine.Info {
	t.Helper()
	out := map[string]engine.Info{}
	for cursor := ""; ; {
		infos, next, err := l.List(ctx, prefix, cursor, 10)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, i := range infos {
			out[i.Name] = i
		}
		if next == "" {
			return out
		}
		cursor = next
	}
}

func keys(m map[string]engine.Info) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// inspectKind inspects h's lock as its kind.
func inspectKind(t *testing.T, ctx context.Context, c *distlock.Client, h *adminHeld) engine.Info {
	t.Helper()
	var info engine.Info
	var err error
	switch h.kind {
	case engine.Semaphore:
		info, err = c.Semaphore(h.name, 3).Inspect(ctx)
	case engine.RWLock:
		info, err = c.RWMutex(h.name).Inspect(ctx)
	default:
		info, err = c.Inspect(ctx, h.name)
	}
	if err != nil {
		t.Fatalf("inspect %q: %v", h.name, err)
	}
	return info
}

// checkAdminInfo checks that info (from how) shows h's one holder: kind,
// owner, weight, token, and a time left within the lease's ttl.
func checkAdminInfo(t *testing.T, how string, info engine.Info, h *adminHeld) {
	t.Helper()
	l := h.lease
	if !info.Held || info.Kind != h.kind || info.Token != l.Token() {
		t.Fatalf("%s %q: held %v, kind %v, token %d; want held, %v, %d", how, h.name, info.Held, info.Kind, info.Token, h.kind, l.Token())
	}
	if h.kind == 0 {
		if info.Owner != l.Owner() || info.TTL <= 0 || info.TTL > l.TTL() {
			t.Fatalf("%s %q: owner %q ttl %v; want %q, ttl in (0, %v]", how, h.name, info.Owner, info.TTL, l.Owner(), l.TTL())
		}
		return
	}
	if h.kind == engine.Semaphore && info.Limit != 3 {
		t.Errorf("%s %q: limit %d, want 3", how, h.name, info.Limit)
	}
	if len(info.Holders) != 1 {
		t.Fatalf("%s %q: holders %+v, want one", how, h.name, info.Holders)
	}
	hd := info.Holders[0]
	if hd.Owner != l.Owner() || hd.Weight != h.weight || hd.Token != l.Token() || hd.Count != 1 || hd.TTL <= 0 || hd.TTL > l.TTL() {
		t.Fatalf("%s %q: holder %+v; want owner %q, weight %d, token %d, 1 hold, ttl in (0, %v]", how, h.name, hd, l.Owner(), h.weight, l.Token(), l.TTL())
	}
}

// listMutexBesideSharedWaiter: a mutex granted on a name whose RW lock's
// writer still waits in the queue (a queued shared waiter refuses no mutex
// where the engine lets the mutex take the free name) is what Inspect and
// List show for the name: the mutex and its holder, not the RW lock's
// empty state.
// A reader holds the RW lock, a ghost writer queues on an engine of the
// backend, the reader releases; then a mutex TryAcquire. Engines that keep
// the name for the queued writer refuse the mutex (every engine here now:
// queued waiters bind the name to their kind, KindQueueBinds), and the
// case ends.
func (s *suite) listMutexBesideSharedWaiter(t *testing.T) {
	s.sharer(t)
	e := s.h.New(t)
	lister, ok := e.(engine.Lister)
	if !ok {
		t.Skip("the engine lists no locks (engine.Lister)")
	}
	if _, ok := e.(engine.Queuer); !ok {
		t.Skip("the engine keeps no waiter queue (engine.Queuer)")
	}
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	c := s.client(t)
	r, err := c.RWMutex(name).RLock(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "ghost-writer", Attempt: "ghost-writer", TTL: time.Minute,
		Waiting: true, Waiter: "ghost-writer", WaiterTTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: engine.RWPermits})
	if err != nil || g.Acquired || !g.Queued {
		t.Fatalf("the ghost writer's entry: %+v, %v", g, err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := s.client(t).TryAcquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Skipf("the engine keeps the name for the queued writer: %v", err)
	}
	defer func() { _ = m.Release(ctx) }()
	shows := func(what string, i engine.Info) {
		t.Helper()
		if i.Kind != engine.Mutex || !i.Held || i.Owner != m.Owner() || i.Token != m.Token() {
			t.Fatalf("%s shows %+v, want the mutex held by %s (token %d)", what, i, m.Owner(), m.Token())
		}
	}
	info, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	shows("Inspect", info)
	infos, _, err := lister.List(ctx, name, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.Name == name {
			shows("List", i)
			return
		}
	}
	t.Fatalf("List(%q) = %+v: the held mutex is missing", name, infos)
}
