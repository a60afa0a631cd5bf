package enginetest

// Cases first written as acceptance tests of two engines by a stranger to
// them (the public API only), and engine-agnostic: every engine is held to
// them here.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// sharedKinds reports, without skipping, which shared kinds the backend
// keeps: RW locks (and semaphores of limit 1) when shared, semaphores of
// a limit above 1 when sems (see sharer and semaphores).
func (s *suite) sharedKinds(t *testing.T) (shared, sems bool) {
	t.Helper()
	e := s.h.New(t)
	sh, ok := e.(engine.Sharer)
	if !ok {
		return false, false
	}
	ctx := ctxTimeout(t, 30*time.Second)
	probe := engine.ReleaseRequest{Name: lockName(t) + "-probe", Owner: "probe", Kind: engine.RWLock}
	if _, err := e.Release(ctx, probe); errors.Is(err, errors.ErrUnsupported) {
		return false, false
	}
	_, err := sh.SetLimit(ctx, lockName(t)+"-probe", 2)
	return true, !errors.Is(err, errors.ErrUnsupported)
}

// sharedWaiterGivesUp: a queued shared waiter that gives up (its context
// cancelled, or its Client closed) does not keep out the waiters behind
// it. A reader holds an RW lock; a writer queues (and keeps newer readers
// out), a reader queues behind it; the writer gives up: the reader behind
// is granted beside the holder, well before the writer's queue entry
// could have lapsed by its heartbeat ttl (distlock.WaiterTTL), and the
// holder keeps its lease. The same for a heavy semaphore request in front
// of a light one (skipped where semaphores above 1 are refused).
func (s *suite) sharedWaiterGivesUp(t *testing.T) {
	s.sharer(t)
	for _, kind := range []string{"rw", "semaphore"} {
		for _, how := range []string{"cancel", "close"} {
			t.Run(kind+"/"+how, func(t *testing.T) {
				if kind == "semaphore" {
					s.semaphores(t)
				}
				s.sharedWaiterGivesUpOnce(t, kind, how)
			})
		}
	}
}

func (s *suite) sharedWaiterGivesUpOnce(t *testing.T, kind, how string) {
	ctx := ctxTimeout(t, 60*time.Second)
	name := lockName(t)
	take := func(c *distlock.Client, ctx context.Context, big bool) (*distlock.Lease, error) {
		switch {
		case kind == "rw" && big:
			return c.RWMutex(name).Lock(ctx)
		case kind == "rw":
			return c.RWMutex(name).RLock(ctx)
		case big:
			return c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(3))
		default:
			return c.Semaphore(name, 3).Acquire(ctx)
		}
	}
	watch := s.client(t)
	var slowest time.Duration // of the round trips measured (Inspect)
	waiters := func() int {
		var info distlock.Info
		var err error
		start := time.Now()
		if kind == "rw" {
			info, err = watch.RWMutex(name).Inspect(ctx)
		} else {
			info, err = watch.Semaphore(name, 3).Inspect(ctx)
		}
		slowest = max(slowest, time.Since(start))
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		return info.Waiters
	}
	h, err := take(s.client(t), ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(ctx) }()

	front := s.client(t)
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	ferr := make(chan error, 1)
	go func() {
		l, err := take(front, fctx, true)
		if l != nil {
			_ = l.Release(ctx)
			err = fmt.Errorf("granted (token %d) while the holder holds", l.Token())
		}
		ferr <- err
	}()
	WaitFor(t, 20*time.Second, "the front waiter to queue", func() bool {
		select {
		case err := <-ferr:
			t.Fatalf("the front waiter ended before it queued: %v", err)
		default:
		}
		return waiters() == 1
	})

	behind := s.client(t)
	got := make(chan *distlock.Lease, 1)
	go func() {
		l, err := take(behind, ctx, false)
		if err != nil {
			t.Errorf("the waiter behind: %v", err)
		}
		got <- l
	}()
	WaitFor(t, 20*time.Second, "the waiter behind to queue", func() bool {
		select {
		case l := <-got: // granted past the front waiter: not queued behind it
			if l != nil {
				t.Fatalf("the waiter behind was granted (token %d) past the queued front waiter", l.Token())
			}
			t.FailNow()
		default:
		}
		return waiters() == 2
	})

	probe := StartProbe(t)
	gaveUp := time.Now()
	if how == "cancel" {
		fcancel()
	} else {
		_ = front.Close()
	}
	if err := <-ferr; !errors.Is(err, context.Canceled) && !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("the front waiter after it gave up (%s): %v", how, err)
	}
	var l *distlock.Lease
	select {
	case l = <-got:
	case <-ctx.Done():
		t.Fatal("the waiter behind was never granted")
	}
	took := time.Since(gaveUp)
	if l == nil {
		t.FailNow()
	}
	defer func() { _ = l.Release(ctx) }()
	if err := h.Err(); err != nil {
		t.Fatalf("the holder after the front waiter gave up: %v", err)
	}
	t.Logf("granted %v after the front waiter gave up (%s)", took, how)
	// Had the front waiter's entry stayed in the queue, the one behind
	// would have waited for it to lapse: at least 2/3 of WaiterTTL after
	// its last heartbeat. The front's leave, a wake-up and an attempt
	// (round trips, each measured as the slowest Inspect of the test) and
	// scheduling take less than half of it.
	machine := 4*slowest + probe.Slack()
	Bounded(t, "the grant of the waiter behind after the front one gave up ("+how+")", took,
		distlock.WaiterTTL/2, machine, distlock.WaiterTTL/2)
}

// listUnderChurn: with locks of every kind the backend keeps held all
// along (a mutex, two permits of a semaphore, RW readers, an RW writer),
// every complete listing (engine.Lister, paged with limits of 1 to 3)
// lists each of them, with its kind and its holders' tokens, while
// another Client takes and releases other names of the same prefix,
// sorted between them, of every kind, meanwhile. (A listing may list a
// lock twice, engine.Lister says: every time, it must be the same lock.)
func (s *suite) listUnderChurn(t *testing.T) {
	e := s.h.New(t)
	lister, ok := e.(engine.Lister)
	if !ok {
		t.Skip("the engine cannot list its locks (engine.Lister)")
	}
	shared, sems := s.sharedKinds(t)
	ctx := ctxTimeout(t, 60*time.Second)
	holder := s.client(t)
	prefix := lockName(t) + "/"
	type steady struct {
		kind   engine.Kind
		tokens []uint64
	}
	want := map[string]*steady{}
	for i := range 8 {
		name := fmt.Sprintf("%s%02d-steady", prefix, i*3)
		var ls []*distlock.Lease
		var k engine.Kind
		take := func(l *distlock.Lease, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ls = append(ls, l)
		}
		switch {
		case i%4 == 1 && sems:
			k = engine.Semaphore
			for range 2 {
				take(holder.Semaphore(name, 3).Acquire(ctx))
			}
		case i%4 == 2 && shared:
			k = engine.RWLock
			take(holder.RWMutex(name).RLock(ctx))
		case i%4 == 3 && shared:
			k = engine.RWLock
			take(holder.RWMutex(name).Lock(ctx))
		default:
			take(holder.Acquire(ctx, name))
		}
		st := &steady{kind: k}
		for _, l := range ls {
			st.tokens = append(st.tokens, l.Token())
		}
		slices.Sort(st.tokens)
		want[name] = st
	}

	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan struct{})
	c := s.client(t)
	go func() {
		defer close(churned)
		for n := 0; churnCtx.Err() == nil; n++ {
			name := fmt.Sprintf("%s%02d-churn", prefix, (n%8)*3+1+n%2)
			var l *distlock.Lease
			var err error
			switch {
			case n%3 == 1 && sems:
				l, err = c.Semaphore(name+"s", 2).TryAcquire(churnCtx)
			case n%3 == 2 && shared:
				l, err = c.RWMutex(name + "r").TryRLock(churnCtx)
			default:
				l, err = c.TryAcquire(churnCtx, name)
			}
			if err == nil {
				_ = l.Release(ctx)
			}
		}
	}()
	defer func() { stopChurn(); <-churned }()

	twice := map[string]int{}
	// Rounds until 30 or a few seconds, whichever comes first (at least 3).
	end := time.Now().Add(3 * time.Second)
	for round := 0; round < 30 && (round < 3 || time.Now().Before(end)); round++ {
		limit := 1 + round%3
		seen := map[string][]engine.Info{}
		pages := 0
		for cursor := ""; ; pages++ {
			if pages > 10000 {
				t.Fatalf("round %d (limit %d): the listing never ends", round, limit)
			}
			infos, next, err := lister.List(ctx, prefix, cursor, limit)
			if err != nil {
				t.Fatalf("round %d (limit %d): List: %v", round, limit, err)
			}
			for _, i := range infos {
				if !strings.HasPrefix(i.Name, prefix) {
					t.Fatalf("round %d: List of prefix %q lists %q", round, prefix, i.Name)
				}
				seen[i.Name] = append(seen[i.Name], i)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		for name, st := range want {
			infos := seen[name]
			if len(infos) == 0 {
				t.Fatalf("round %d (limit %d, %d pages): %s (held all along as a %v) missing from the listing (listed: %v)",
					round, limit, pages, name, st.kind, slices.Sorted(func(yield func(string) bool) {
						for n := range seen {
							if !yield(n) {
								return
							}
						}
					}))
			}
			for _, info := range infos {
				var tokens []uint64
				if st.kind == engine.Mutex {
					if info.Held {
						tokens = append(tokens, info.Token)
					}
				} else {
					for _, h := range info.Holders {
						tokens = append(tokens, h.Token)
					}
				}
				slices.Sort(tokens)
				if info.Kind != st.kind || !slices.Equal(tokens, st.tokens) {
					t.Fatalf("round %d (limit %d): %s listed as %+v (tokens %v), want a %v with tokens %v",
						round, limit, name, info, tokens, st.kind, st.tokens)
				}
			}
			if len(infos) > 1 {
				twice[name]++
			}
		}
	}
	if len(twice) > 0 {
		// Allowed (engine.Lister): a lock whose stored items span pages
		// (an etcd semaphore's holders' keys) may be listed on each.
		t.Logf("listed more than once in a listing (rounds, by name): %v", twice)
	}
}

// refusalsStoreNothing: calls refused as bad input or as the wrong kind
// are a typed *distlock.ArgumentError and change nothing: no kind is left
// stored with the name (another kind is granted on it afterwards), and a
// holder keeps its lock. SetLimit of a held mutex and of an RW lock, a
// mutex of RW readers, a weight above the limit, negative ttls and
// limits, and sets with an empty or a repeated name.
func (s *suite) refusalsStoreNothing(t *testing.T) {
	s.sharer(t)
	_, sems := s.sharedKinds(t)
	ctx := ctxTimeout(t, 60*time.Second)
	c, other := s.client(t), s.client(t)
	limit := 1 // of the semaphores: 2 where semaphores above 1 are kept
	if sems {
		limit = 2
	}
	isArg := func(what string, err error) {
		t.Helper()
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("%s: %v, want an *ArgumentError", what, err)
		}
	}
	refusedLimit := func(what string, err error) {
		t.Helper()
		if !sems && errors.Is(err, errors.ErrUnsupported) {
			return // no SetLimit above 1 here: refused as unsupported
		}
		isArg(what, err)
	}
	rwFree := func(what, name string) {
		t.Helper()
		l, err := other.RWMutex(name).TryLock(ctx)
		if err != nil {
			t.Fatalf("after %s: an RW writer on the name: %v (a kind left stored?)", what, err)
		}
		_ = l.Release(ctx)
	}
	semFree := func(what, name string) {
		t.Helper()
		l, err := other.Semaphore(name, limit).TryAcquire(ctx)
		if err != nil {
			t.Fatalf("after %s: a permit on the name: %v (a kind left stored?)", what, err)
		}
		_ = l.Release(ctx)
	}

	// SetLimit of a name held as a mutex.
	name := lockName(t)
	m, err := c.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	refusedLimit("SetLimit of a held mutex", other.Semaphore(name, 2).SetLimit(ctx, 3))
	if err := m.Extend(ctx, m.TTL()); err != nil {
		t.Fatalf("the mutex after the refused SetLimit: %v", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rwFree("SetLimit of a held mutex", name)

	// A weight above the declared limit, on a new name.
	name = lockName(t)
	_, err = c.Semaphore(name, limit).TryAcquire(ctx, distlock.WithWeight(limit+1))
	isArg("a weight above the limit", err)
	_, err = c.Semaphore(name, limit).Acquire(ctx, distlock.WithWeight(limit+1))
	isArg("a waiting weight above the limit", err)
	rwFree("a weight above the limit", name)

	// SetLimit and a mutex refused on a name held by RW readers.
	name = lockName(t)
	r, err := c.RWMutex(name).RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refusedLimit("SetLimit of an RW lock", other.Semaphore(name, 2).SetLimit(ctx, 3))
	_, err = other.TryAcquire(ctx, name)
	isArg("a mutex of RW readers", err)
	var info distlock.Info
	WaitFor(t, 10*time.Second, "the RW lock's state after the refusals", func() bool {
		info, err = other.RWMutex(name).Inspect(ctx)
		return err == nil && info.Kind == engine.RWLock && len(info.Holders) == 1 && info.Holders[0].Token == r.Token()
	})
	if err := r.Extend(ctx, r.TTL()); err != nil {
		t.Fatalf("the reader after the refusals: %v", err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Bad ttls and limits on new names store nothing.
	name = lockName(t)
	_, err = c.RWMutex(name).RLock(ctx, distlock.WithTTL(-time.Second))
	isArg("a reader with a negative ttl", err)
	semFree("a reader with a negative ttl", name)
	name = lockName(t)
	_, err = c.Semaphore(name, limit).Acquire(ctx, distlock.WithTTL(-time.Second))
	isArg("a permit with a negative ttl", err)
	_, err = c.Semaphore(name, -2).Acquire(ctx)
	isArg("a permit of limit -2", err)
	isArg("SetLimit -1", c.Semaphore(name, limit).SetLimit(ctx, -1))
	rwFree("a permit with a bad ttl or limit", name)

	// A set refused for one bad name holds none of the others.
	name = lockName(t)
	_, err = c.AcquireAll(ctx, []string{name + "-a", "", name + "-b"})
	isArg("a set with an empty name", err)
	_, err = c.AcquireAll(ctx, []string{name + "-a", name + "-a"})
	isArg("a set with a name twice", err)
	for _, n := range []string{name + "-a", name + "-b"} {
		l, err := other.TryAcquire(ctx, n)
		if err != nil {
			t.Fatalf("%s after the refused sets: %v", n, err)
		}
		_ = l.Release(ctx)
	}
}

// adminElectionAndLatch: the admin listing (engine.Lister) shows an
// election's leader: its term as the token, its Client's owner and its
// value (proclaimed) as the metadata; a force-release of the election
// tells the leader it was taken over, and the next leader's term is
// above. A counting latch beside it (on an engine.Latcher) keeps its
// count through the listing and the force-release, and Leaks reports
// nothing of the election.
func (s *suite) adminElectionAndLatch(t *testing.T) {
	e := s.h.New(t)
	lister, ok := e.(engine.Lister)
	if !ok {
		t.Skip("the engine cannot list its locks (engine.Lister)")
	}
	if _, ok := e.(engine.ForceReleaser); !ok {
		t.Skip("the engine cannot force-release (engine.ForceReleaser)")
	}
	ctx := ctxTimeout(t, 60*time.Second)
	c, other := s.client(t), s.client(t)
	prefix := lockName(t) + "/"
	el, latchName := prefix+"election", prefix+"latch"
	// A short ttl: the leader hears of the force-release at its next
	// renewal (every third of it).
	ld, err := c.Campaign(ctx, el, "me", distlock.WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Proclaim(ctx, "me again"); err != nil {
		t.Fatal(err)
	}
	var latch *distlock.CountDownLatch
	if _, ok := e.(engine.Latcher); ok {
		latch = c.CountDownLatch(latchName)
		switch ok, err := latch.TrySetCount(ctx, 3); {
		case errors.Is(err, errors.ErrUnsupported):
			t.Logf("no latch: %v", err)
			latch = nil
		case err != nil || !ok:
			t.Fatalf("the latch's TrySetCount: %v, %v", ok, err)
		}
	}
	var info engine.Info
	WaitFor(t, 30*time.Second, "the listing to show the proclaimed value", func() bool {
		var ok bool
		info, ok = listed(t, ctx, lister, prefix)[el]
		return ok && info.Metadata == "me again"
	})
	if !info.Held || info.Token != ld.Term() || info.Owner != ld.Lease().Owner() {
		t.Fatalf("the election listed as %+v, want term %d, owner %q, value %q", info, ld.Term(), ld.Lease().Owner(), "me again")
	}
	if latch != nil {
		wantCount(t, ctx, latch, 3)
	}
	if f, ok := e.(engine.LeakFinder); ok {
		leaks, _, err := f.Leaks(ctx, prefix, time.Hour, "", 100)
		if err != nil {
			t.Fatalf("Leaks: %v", err)
		}
		// A latch's stored count may have no expiry (etcd: by design,
		// docs/ETCD.md): nothing of the election may be reported.
		leaks = slices.DeleteFunc(leaks, func(l engine.Leak) bool {
			return l.Name != el && !strings.Contains(l.Key, "election")
		})
		if len(leaks) != 0 {
			t.Fatalf("Leaks reports the election: %+v", leaks)
		}
	}
	if ok, err := other.ForceRelease(ctx, el); err != nil || !ok {
		t.Fatalf("ForceRelease of the election: %v, %v; want true", ok, err)
	}
	takenOver(t, ld.Lease(), "the leader")
	next, err := other.Campaign(ctx, el, "next")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = next.Resign(ctx) }()
	if next.Term() <= ld.Term() {
		t.Fatalf("the next term %d is not above %d", next.Term(), ld.Term())
	}
	WaitFor(t, 10*time.Second, "Leader to name the next leader", func() bool {
		l, err := c.Leader(ctx, el)
		return err == nil && l.Value == "next" && l.Term == next.Term()
	})
	if latch != nil {
		wantCount(t, ctx, latch, 3)
	}
}
