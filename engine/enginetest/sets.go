package enginetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// The conformance cases of sets of locks (Client.AcquireAll and friends),
// run on every engine: in one step where the engine grants sets
// (engine.MultiAcquirer), name by name in sorted order elsewhere. Each
// Client has an engine of its own, as separate processes would.

// setAllOrNothing: a set is granted whole, with each name's own owner and
// token visible to others; a set that overlaps a held one is refused whole,
// naming the held name, and leaves nothing held or queued; Release frees
// every member; each name's tokens increase over set and single grants.
func (s *suite) setAllOrNothing(t *testing.T) {
	ctx := ctxTimeout(t, time.Minute)
	c1, c2 := s.client(t), s.client(t)
	p := lockName(t) + "/"
	a, b, x := p+"a", p+"b", p+"x"
	set, err := c1.AcquireAll(ctx, []string{b, a})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Names() = %v, want [%s %s]", got, a, b)
	}
	for _, n := range []string{a, b} {
		info, err := c2.Inspect(ctx, n)
		if err != nil || !info.Held || info.Owner != set.Owner(n) || info.Token != set.Token(n) || set.Token(n) == 0 {
			t.Fatalf("%q: %+v, %v; want held by the set's owner with its token %d", n, info, err, set.Token(n))
		}
	}
	_, err = c2.TryAcquireAll(ctx, []string{x, b})
	var le *distlock.LockedError
	if !errors.As(err, &le) || le.Name != b {
		t.Fatalf("an overlapping set: %v; want a *LockedError naming %q", err, b)
	}
	assertSetFree(t, c2, x)
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertSetFree(t, c2, a, b)

	last := map[string]uint64{}
	check := func(name string, token uint64) {
		t.Helper()
		if token <= last[name] {
			t.Fatalf("token of %q went from %d to %d", name, last[name], token)
		}
		last[name] = token
	}
	for i := range 4 {
		names := []string{a, b, x}[:2+i%2]
		set, err := c1.AcquireAll(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			check(n, set.Token(n))
		}
		if err := set.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l, err := c2.Acquire(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		check(a, l.Token())
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// setGivesUpClean: a set whose wait ends on a held name, or whose engine
// fails on a name after others were granted, holds nothing and queues
// nowhere afterwards; the holder of the busy name keeps it.
func (s *suite) setGivesUpClean(t *testing.T) {
	ctx := ctxTimeout(t, time.Minute)
	holder, c := s.client(t), s.client(t)
	p := lockName(t) + "/"
	names := []string{p + "a", p + "b", p + "c", p + "d"}
	l, err := holder.Acquire(ctx, p+"c", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// The wait's budget is for reaching the busy name: a wait that ran
	// out on a or b (taken first, in order) is judged the same (nothing
	// held afterwards) and tried again with twice the budget; a machine
	// that never reaches c within 8 s skips.
	for budget := 500 * time.Millisecond; ; budget *= 2 {
		wctx, cancel := context.WithTimeout(ctx, budget)
		_, err = c.AcquireAll(wctx, names)
		cancel()
		var we *distlock.WaitError
		if !errors.As(err, &we) || !slices.Contains(names[:3], we.Name) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AcquireAll: %v; want a *WaitError naming %q", err, p+"c")
		}
		WaitFor(t, 20*time.Second, "the set's names free and unqueued", func() bool {
			return SetFree(ctx, c, p+"a", p+"b", p+"d") == nil
		})
		if we.Name == p+"c" {
			break
		}
		if budget >= 8*time.Second {
			t.Skipf("machine too slow: the set's wait ran out on %q, before its busy name, with a budget of %v", we.Name, budget)
		}
	}
	if info, err := c.Inspect(ctx, p+"c"); err != nil || info.Owner != l.Owner() {
		t.Fatalf("%q: %+v, %v; want still held by its holder", p+"c", info, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 20*time.Second, "no waiter left on the busy name", func() bool {
		return SetFree(ctx, c, p+"c") == nil
	})

	failing := distlock.New(failOn{s.h.New(t), p + "c"}, distlock.WithBackendFailureBudget(2*time.Second))
	t.Cleanup(func() { _ = failing.Close() })
	for _, try := range []bool{false, true} {
		if try {
			_, err = failing.TryAcquireAll(ctx, names)
		} else {
			_, err = failing.AcquireAll(ctx, names)
		}
		if !errors.Is(err, distlock.ErrBackend) || !errors.Is(err, errSetInjected) {
			t.Fatalf("a failure on the third name (try %v): %v; want the injected backend error", try, err)
		}
		assertSetFree(t, c, names...)
	}
}

// setLoss: a member taken away (an operator's force-release) ends the
// set: Done closes and Err names the member.
func (s *suite) setLoss(t *testing.T) {
	ctx := ctxTimeout(t, time.Minute)
	c := s.client(t)
	p := lockName(t) + "/"
	set, err := c.AcquireAll(ctx, []string{p + "a", p + "b", p + "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Release(ctx)
	s.delete(t, c, p+"b")
	select {
	case <-set.Done():
	case <-ctx.Done():
		t.Fatal("the set was not lost")
	}
	var lost *distlock.LostError
	if !errors.As(set.Err(), &lost) || lost.Name != p+"b" {
		t.Fatalf("Err() = %v; want a *LostError naming %q", set.Err(), p+"b")
	}
}

// setCycles: Clients whose sets form a ring in opposite orders all finish
// their rounds, with mutual exclusion on every name (SetCycles).
func (s *suite) setCycles(t *testing.T) {
	clients := make([]*distlock.Client, 4)
	for i := range clients {
		clients[i] = s.client(t)
	}
	SetCycles(t, ctxTimeout(t, 2*time.Minute), clients, lockName(t)+"/", 5)
}

// setKilledHolder: a Client that dies holding part of a set (its engine
// stops answering after it took the first names: no renewal, no release
// reaches the backend, as when its process is killed) never returns a set,
// and its names come back by expiry alone: a set that asks for them is
// granted once the dead Client's leases end, with tokens above the dead
// one's.
func (s *suite) setKilledHolder(t *testing.T) {
	ctx := ctxTimeout(t, 2*time.Minute)
	p := lockName(t) + "/"
	a, b, c := p+"a", p+"b", p+"c"
	other := s.client(t)
	l, err := other.Acquire(ctx, c, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	dying := &killable{Engine: s.h.New(t), before: c}
	dead := distlock.New(dying, distlock.WithBackendFailureBudget(200*time.Millisecond))
	t.Cleanup(func() { _ = dead.Close() })
	ttl := engine.CapabilitiesOf(dying.Engine).FitTTL(time.Second)
	_, err = dead.AcquireAll(ctx, []string{a, b, c}, distlock.WithTTL(ttl))
	if err == nil {
		t.Fatal("the dying Client got its set")
	}
	held := map[string]uint64{}
	for _, n := range []string{a, b} {
		info, err := other.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		held[n] = info.Token
	}
	if held[a] == 0 {
		t.Skip("the dying Client's set failed before it took a name: nothing to expire")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	set, err := other.AcquireAll(ctx, []string{a, b, c})
	if err != nil {
		t.Fatalf("the names of a dead Client's partial set: %v", err)
	}
	defer set.Release(ctx)
	for n, tok := range held {
		if tok != 0 && set.Token(n) <= tok {
			t.Fatalf("%q: token %d after the dead Client's %d", n, set.Token(n), tok)
		}
	}
}

// setNotStarved: a set waits in each name's queue, so single-name
// acquirers that keep its names busy do not starve it.
func (s *suite) setNotStarved(t *testing.T) {
	ctx := ctxTimeout(t, 2*time.Minute)
	p := lockName(t) + "/"
	a, b := p+"a", p+"b"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	grants := 0
	for i := range 4 {
		c := s.client(t)
		name := []string{a, b}[i%2]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := c.Do(ctx, name, func(context.Context) error {
					mu.Lock()
					grants++
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
					return nil
				})
				if err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	WaitFor(t, time.Minute, "the single-name acquirers busy", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return grants >= 10
	})
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := s.client(t).DoAll(wctx, []string{a, b}, func(context.Context) error { return nil })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("the set starved: %v", err)
	}
}

// errSetInjected is failOn's failure.
var errSetInjected = errors.New("injected failure")

// failOn is an engine whose Acquire of one name fails (it hides the
// engine's optional interfaces, so a Client takes sets name by name).
type failOn struct {
	engine.Engine
	name string
}

func (f failOn) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Name == f.name {
		return engine.Grant{}, errSetInjected
	}
	return f.Engine.Acquire(ctx, r)
}

// killable is an engine that dies (every call fails from then on, nothing
// reaches the backend) when it is asked for the name before. It hides the
// engine's optional interfaces, so a set is taken name by name.
type killable struct {
	engine.Engine
	before string
	mu     sync.Mutex
	dead   bool
}

var errKilled = errors.New("the process was killed")

func (k *killable) alive(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if name == k.before {
		k.dead = true
	}
	return !k.dead
}

func (k *killable) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if !k.alive(r.Name) {
		return engine.Grant{}, errKilled
	}
	return k.Engine.Acquire(ctx, r)
}

func (k *killable) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if !k.alive("") {
		return engine.ReleaseResult{}, errKilled
	}
	return k.Engine.Release(ctx, r)
}

func (k *killable) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if !k.alive("") {
		return nil, errKilled
	}
	return k.Engine.Extend(ctx, rs)
}

// SetFree returns an error unless nobody holds any of names and nobody
// queues for them, as c's Inspect sees them: what a set that failed or was
// released must leave behind.
func SetFree(ctx context.Context, c *distlock.Client, names ...string) error {
	for _, n := range names {
		info, err := c.Inspect(ctx, n)
		if err != nil {
			return err
		}
		if info.Held || info.Waiters != 0 {
			return errors.New(n + " held or waited for")
		}
	}
	return nil
}

// assertSetFree fails t unless nobody holds any of names and nobody
// queues for them.
func assertSetFree(t *testing.T, c *distlock.Client, names ...string) {
	t.Helper()
	if err := SetFree(context.Background(), c, names...); err != nil {
		t.Fatal(err)
	}
}

// setKindRefusalNamesName: a set with a name held as a semaphore, not its
// first, is refused with the kind error Acquire of that name gives (word
// for word), naming it, not the set's first name; nothing is held after.
// (Redis's set script answered the kind without the name, and the engine
// named the first one.)
func (s *suite) setKindRefusalNamesName(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 30*time.Second)
	c := s.client(t)
	p := lockName(t) + "/"
	free, sem := p+"a", p+"z"
	l, err := c.Semaphore(sem, 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	want := engine.KindError(sem, engine.Semaphore, engine.Mutex).(*engine.ArgumentError).Reason
	for _, try := range []bool{true, false} {
		var set *distlock.LeaseSet
		if try {
			set, err = c.TryAcquireAll(ctx, []string{free, sem})
		} else {
			set, err = c.AcquireAll(ctx, []string{free, sem})
		}
		if set != nil {
			_ = set.Release(ctx)
			t.Fatalf("a set with a name held as a semaphore (try %v): granted", try)
		}
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) || ae.Arg != "name" || ae.Reason != want {
			t.Fatalf("a set with a name held as a semaphore (try %v): %v, want the kind error %q", try, err, want)
		}
		if info, err := c.Inspect(ctx, free); err != nil || info.Held {
			t.Fatalf("%q after the refused set: %+v, %v; want free", free, info, err)
		}
	}
}
