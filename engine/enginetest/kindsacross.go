package enginetest

// The kinds less travelled, across Clients on different members of one
// backend (RunKindsAcross): countdown latches, elections, semaphores with
// SetLimit racing acquires, RW locks, sets over names held as other kinds,
// and the admin calls on them. Written by a stranger for etcd and
// ZooKeeper (engine/etcd, engine/zookeeper), which run them on one member
// and on three.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// KindsAcross is what RunKindsAcross needs of a backend.
type KindsAcross struct {
	// Clients are three Clients of one backend, each on an engine (a
	// connection, a session) of its own, on different members where the
	// backend has several.
	Clients []*distlock.Client
	// Admin is an engine of the backend that lists and finds leaks.
	Admin interface {
		engine.Lister
		engine.LeakFinder
	}
	// Paused is a Client whose engine (PausedEngine) blocks its renewals
	// and releases between Pause and Resume, as a stopped process's.
	Paused        *distlock.Client
	PausedEngine  engine.Engine
	Pause, Resume func()
	// TermTTL is the ttl of the leaderships of TermLimit and
	// PausedLeaderDeposed.
	TermTTL time.Duration
}

// RunKindsAcross runs the kinds on k's Clients, one subtest each.
func RunKindsAcross(t *testing.T, k KindsAcross) {
	c := k.Clients
	t.Run("LatchWaitRacesCountDown", func(t *testing.T) { kindsLatchRace(t, c) })
	t.Run("SetLimitRacesAcquires", func(t *testing.T) { kindsSetLimitRace(t, c) })
	t.Run("RWAcrossMembers", func(t *testing.T) { kindsRWAcross(t, c) })
	t.Run("TermLimit", func(t *testing.T) { kindsTermLimit(t, c[0], c[1], k.TermTTL) })
	t.Run("ProclaimOrder", func(t *testing.T) { kindsProclaimOrder(t, c[0], c[1]) })
	t.Run("BadInput", func(t *testing.T) { kindsBadInput(t, c[0]) })
	t.Run("SetsOverOtherKinds", func(t *testing.T) { kindsSetsOverKinds(t, c, c[0]) })
	t.Run("AdminOnKinds", func(t *testing.T) { kindsAdminKinds(t, c, k.Admin, k.Admin) })
	t.Run("PausedLeaderDeposed", func(t *testing.T) {
		kindsPausedLeader(t, k.Paused, k.Pause, k.Resume, k.PausedEngine, c[1], c[2], k.TermTTL)
	})
}

// kindsServed is a waiter's outcome.
type kindsServed struct {
	what  string
	token uint64
	err   error
	at    time.Time
	lease *distlock.Lease
}

// kindsGoWait runs f in a goroutine and sends its outcome on ch.
func kindsGoWait(ctx context.Context, ch chan<- kindsServed, what string, f func(context.Context) (*distlock.Lease, error)) {
	go func() {
		l, err := f(ctx)
		s := kindsServed{what: what, err: err, at: time.Now(), lease: l}
		if l != nil {
			s.token = l.Token()
		}
		ch <- s
	}()
}

// kindsQueuedOn waits until info reports n waiters.
func kindsQueuedOn(t *testing.T, what string, n int, info func() (distlock.Info, error)) {
	t.Helper()
	WaitFor(t, 15*time.Second, fmt.Sprintf("%d waiter(s) queued on %s", n, what), func() bool {
		in, err := info()
		return err == nil && in.Waiters == n
	})
}

// kindsTermLog records every term an observer reports (0: nobody leads).
type kindsTermLog struct {
	mu    sync.Mutex
	terms []uint64
}

// kindsObserveTerms records what ch reports until it is closed.
func kindsObserveTerms(ch <-chan distlock.Leader) *kindsTermLog {
	tl := &kindsTermLog{}
	go func() {
		for l := range ch {
			tl.mu.Lock()
			tl.terms = append(tl.terms, l.Term)
			tl.mu.Unlock()
		}
	}()
	return tl
}

// until waits for term to be reported, then checks that the leaders'
// terms never went down.
func (tl *kindsTermLog) until(t *testing.T, term uint64, within time.Duration) {
	t.Helper()
	seen := func() []uint64 {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return slices.Clone(tl.terms)
	}
	WaitFor(t, within, fmt.Sprintf("the observer reporting term %d", term), func() bool { return slices.Contains(seen(), term) })
	var last uint64
	for _, x := range seen() {
		if x != 0 && x < last {
			t.Fatalf("observer's terms went down: %v", seen())
		}
		last = max(last, x)
	}
	t.Logf("observer reported %v", seen())
}

// kindsLossAt returns when l's loss was recorded (LostError.At), or now when l
// ended otherwise.
func kindsLossAt(l *distlock.Lease) time.Time {
	<-l.Done()
	var lost *distlock.LostError
	if errors.As(l.Err(), &lost) {
		return lost.At
	}
	return time.Now()
}

// kindsLatchRace: 25 rounds of a latch of count 1 whose CountDown (one
// Client) races a new Wait (another Client, another member): every Wait
// returns (no lost wake-up), TrySetCount on a counting latch answers false
// and keeps its count, and after zero it sets again.
func kindsLatchRace(t *testing.T, c []*distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range 25 {
		name := fmt.Sprintf("latch-race-%d", i)
		set, err := c[0].CountDownLatch(name).TrySetCount(ctx, 1)
		if err != nil || !set {
			t.Fatalf("round %d: TrySetCount(1) = %v, %v", i, set, err)
		}
		if set, err := c[1].CountDownLatch(name).TrySetCount(ctx, 7); err != nil || set {
			t.Fatalf("round %d: TrySetCount(7) on a counting latch = %v, %v, want false", i, set, err)
		}
		if n, err := c[2].CountDownLatch(name).Count(ctx); err != nil || n != 1 {
			t.Fatalf("round %d: count after a refused TrySetCount %d, %v, want 1", i, n, err)
		}
		// Two TrySetCounts at once on a latch at zero: exactly one sets.
		var sets atomic.Int32
		var wg sync.WaitGroup
		for j := range 2 {
			wg.Go(func() {
				if ok, err := c[j].CountDownLatch(name+"-set").TrySetCount(ctx, int64(3+j)); err != nil {
					t.Errorf("round %d: a concurrent TrySetCount: %v", i, err)
				} else if ok {
					sets.Add(1)
				}
			})
		}
		wg.Wait()
		if n := sets.Load(); n != 1 {
			t.Fatalf("round %d: %d of two concurrent TrySetCounts set the latch, want 1", i, n)
		}
		if n, err := c[2].CountDownLatch(name + "-set").Count(ctx); err != nil || n != 3 && n != 4 {
			t.Fatalf("round %d: the count after two concurrent TrySetCounts: %d, %v", i, n, err)
		} else {
			for range n {
				_ = c[2].CountDownLatch(name + "-set").CountDown(ctx)
			}
		}
		waited := make(chan error, 1)
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		go func() { waited <- c[1+i%2].CountDownLatch(name).Wait(wctx) }()
		if err := c[2-i%2].CountDownLatch(name).CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		err = <-waited
		wcancel()
		if err != nil {
			t.Fatalf("round %d: a Wait racing the CountDown to zero: %v (a lost wake-up)", i, err)
		}
		if set, err := c[0].CountDownLatch(name).TrySetCount(ctx, 2); err != nil || !set {
			t.Fatalf("round %d: TrySetCount after zero = %v, %v, want true", i, set, err)
		}
		_ = c[0].CountDownLatch(name).CountDown(ctx)
		_ = c[1].CountDownLatch(name).CountDown(ctx)
	}
}

// kindsPeak counts holders between their grant's return and their release
// call: never more than the server counts, so above the largest limit ever
// set it is a real violation.
type kindsPeak struct {
	in, max atomic.Int64
}

func (o *kindsPeak) enter() int64 {
	n := o.in.Add(1)
	for {
		m := o.max.Load()
		if n <= m || o.max.CompareAndSwap(m, n) {
			return n
		}
	}
}

// kindsSetLimitRace: SetLimit grows under a queued waiter (granted
// without a release), shrinks under holders (a new permit refused until
// the holders fall under it), races acquires from three members while the
// limit flips between 1 and 2 (never more than 2 holders), and is refused
// typed, changing nothing, on a mutex's and an RW lock's name and below 1.
func kindsSetLimitRace(t *testing.T, c []*distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const name = "setlimit-race"
	ttl := distlock.WithTTL(10 * time.Second)
	s := func(i int) *distlock.Semaphore { return c[i].Semaphore(name, 3) }
	h1, err := s(0).Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := s(1).Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan kindsServed, 1)
	kindsGoWait(ctx, got, "weight 2", func(ctx context.Context) (*distlock.Lease, error) {
		return s(2).Acquire(ctx, ttl, distlock.WithWeight(2))
	})
	kindsQueuedOn(t, name, 1, func() (distlock.Info, error) { return s(0).Inspect(ctx) })
	if err := s(0).SetLimit(ctx, 4); err != nil {
		t.Fatal(err)
	}
	var w kindsServed
	select {
	case w = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the weight-2 waiter not granted within 30 s of SetLimit(4)")
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	if err := s(1).SetLimit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var le *distlock.LockedError
	for _, l := range []*distlock.Lease{nil, h1, h2, w.lease} {
		if l != nil {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if l == w.lease {
			break
		}
		if x, err := s(2).TryAcquire(ctx, ttl); !errors.As(err, &le) {
			t.Fatalf("a permit with the limit shrunk to 1 under busy holders: %v, %v; want a *LockedError", x, err)
		}
	}
	in, err := s(0).Inspect(ctx)
	if err != nil || in.Limit != 1 || in.Held {
		t.Fatalf("after the releases: %+v, %v; want limit 1, free", in, err)
	}

	// The race: acquires from every member while the limit flips.
	var occ kindsPeak
	var wg sync.WaitGroup
	rctx, rcancel := context.WithTimeout(ctx, 4*time.Second)
	for i := range 6 {
		wg.Go(func() {
			for rctx.Err() == nil {
				actx, acancel := context.WithTimeout(rctx, 500*time.Millisecond)
				l, err := s(i%3).Acquire(actx, ttl)
				acancel()
				if err != nil {
					continue
				}
				if n := occ.enter(); n > 2 {
					t.Errorf("%d holders at once, the limit never above 2", n)
				}
				time.Sleep(20 * time.Millisecond) // the holder's work
				occ.in.Add(-1)
				_ = l.Release(context.Background())
			}
		})
	}
	flips := 0
	for rctx.Err() == nil {
		if err := s(flips%3).SetLimit(rctx, 1+flips%2); err != nil && rctx.Err() == nil {
			t.Errorf("SetLimit: %v", err)
		}
		flips++
	}
	wg.Wait()
	rcancel()
	t.Logf("%d SetLimits raced the acquires; at most %d holders at once", flips, occ.max.Load())

	// Refused, typed, nothing changed.
	var ae *distlock.ArgumentError
	if err := s(0).SetLimit(ctx, 0); !errors.As(err, &ae) {
		t.Errorf("SetLimit(0): %v, want an *ArgumentError", err)
	}
	if in, err := s(0).Inspect(ctx); err != nil || in.Limit < 1 || in.Limit > 2 {
		t.Errorf("after SetLimit(0): %+v, %v", in, err)
	}
	m, err := c[0].Acquire(ctx, "setlimit-mutex", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := c[1].Semaphore("setlimit-mutex", 2).SetLimit(ctx, 3); !errors.As(err, &ae) {
		t.Errorf("SetLimit on a held mutex's name: %v, want an *ArgumentError", err)
	}
	_ = m.Release(ctx)
	r, err := c[0].RWMutex("setlimit-rw").RLock(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := c[1].Semaphore("setlimit-rw", 2).SetLimit(ctx, 3); !errors.As(err, &ae) {
		t.Errorf("SetLimit on a read-held RW lock: %v, want an *ArgumentError", err)
	}
	if x, err := c[2].RWMutex("setlimit-rw").TryRLock(ctx, ttl); err != nil {
		t.Errorf("a second reader after the refused SetLimit: %v", err)
	} else {
		_ = x.Release(ctx)
	}
	_ = r.Release(ctx)
}

// kindsRWAcross: a writer through one member; readers through the
// others are refused as contention (not as a kind) while it holds, wait,
// and are granted together after its release with larger tokens; a writer
// queued behind them keeps later readers out until it is kindsServed.
func kindsRWAcross(t *testing.T, c []*distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const name = "rw-across"
	ttl := distlock.WithTTL(10 * time.Second)
	rw := func(i int) *distlock.RWMutex { return c[i].RWMutex(name) }
	wr, err := rw(0).Lock(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	var le *distlock.LockedError
	if _, err := rw(1).TryRLock(ctx, ttl); !errors.As(err, &le) {
		t.Fatalf("TryRLock while a writer holds: %v, want a *LockedError", err)
	}
	if _, err := rw(2).TryLock(ctx, ttl); !errors.As(err, &le) {
		t.Fatalf("TryLock while a writer holds: %v, want a *LockedError", err)
	}
	got := make(chan kindsServed, 3)
	kindsGoWait(ctx, got, "reader 1", func(ctx context.Context) (*distlock.Lease, error) { return rw(1).RLock(ctx, ttl) })
	kindsGoWait(ctx, got, "reader 2", func(ctx context.Context) (*distlock.Lease, error) { return rw(2).RLock(ctx, ttl) })
	kindsQueuedOn(t, name, 2, func() (distlock.Info, error) { return rw(0).Inspect(ctx) })
	if err := wr.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var readers []*distlock.Lease
	for range 2 {
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.token <= wr.Token() {
			t.Errorf("%s's token %d not above the writer's %d", r.what, r.token, wr.Token())
		}
		readers = append(readers, r.lease)
	}
	kindsGoWait(ctx, got, "writer 2", func(ctx context.Context) (*distlock.Lease, error) { return rw(0).Lock(ctx, ttl) })
	kindsQueuedOn(t, name, 1, func() (distlock.Info, error) { return rw(1).Inspect(ctx) })
	if _, err := rw(2).TryRLock(ctx, ttl); !errors.As(err, &le) {
		t.Fatalf("a new reader while a writer waits: %v, want a *LockedError (the writer not starved)", err)
	}
	for _, r := range readers {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w2 := <-got
	if w2.err != nil {
		t.Fatal(w2.err)
	}
	for _, r := range readers {
		if w2.token <= r.Token() {
			t.Errorf("the second writer's token %d not above a reader's %d", w2.token, r.Token())
		}
	}
	_ = w2.lease.Release(ctx)
}

// kindsBadInput: bad input to the latch, the election, the semaphore
// and the RW lock is an *ArgumentError at once, and creates nothing: the
// names' latches count nothing and their locks are free.
func kindsBadInput(t *testing.T, c *distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ae *distlock.ArgumentError
	bad := func(what string, err error) {
		t.Helper()
		if !errors.As(err, &ae) {
			t.Errorf("%s: %v (%T), want an *ArgumentError", what, err, err)
		}
	}
	long := strings.Repeat("n", distlock.MaxNameLen+1)
	for _, name := range []string{"", "a\x00b", long, "}x", "\xff\xfe"} {
		l := c.CountDownLatch(name)
		_, err := l.TrySetCount(ctx, 1)
		bad(fmt.Sprintf("TrySetCount of latch %.20q", name), err)
		bad(fmt.Sprintf("CountDown of latch %.20q", name), l.CountDown(ctx))
		_, err = l.Count(ctx)
		bad(fmt.Sprintf("Count of latch %.20q", name), err)
		bad(fmt.Sprintf("Wait of latch %.20q", name), l.Wait(ctx))
		_, err = c.Campaign(ctx, name, "v")
		bad(fmt.Sprintf("Campaign %.20q", name), err)
		_, err = c.Observe(ctx, name)
		bad(fmt.Sprintf("Observe %.20q", name), err)
		_, err = c.Leader(ctx, name)
		bad(fmt.Sprintf("Leader %.20q", name), err)
		bad(fmt.Sprintf("SetLimit %.20q", name), c.Semaphore(name, 2).SetLimit(ctx, 3))
	}
	const name = "bad-input-kinds"
	l := c.CountDownLatch(name)
	for _, n := range []int64{0, -1, -1 << 62} {
		_, err := l.TrySetCount(ctx, n)
		bad(fmt.Sprintf("TrySetCount(%d)", n), err)
	}
	_, err := c.Campaign(ctx, name, "")
	bad("Campaign with an empty value", err)
	_, err = c.Campaign(ctx, name, strings.Repeat("v", distlock.MaxMetadataLen+1))
	bad("Campaign with a value too long", err)
	_, err = c.Campaign(ctx, name, "bad\xffutf8")
	bad("Campaign with a value not UTF-8", err)
	_, err = c.Semaphore(name, 0).TryAcquire(ctx)
	bad("a semaphore of limit 0", err)
	_, err = c.Semaphore(name, -2).Acquire(ctx)
	bad("a semaphore of limit -2", err)
	_, err = c.Semaphore(name, 2).TryAcquire(ctx, distlock.WithWeight(3))
	bad("weight 3 of limit 2", err)
	_, err = c.Semaphore(name, 2).TryAcquire(ctx, distlock.WithWeight(0))
	bad("weight 0", err)
	bad("SetLimit(-1)", c.Semaphore(name, 2).SetLimit(ctx, -1))
	_, err = c.RWMutex(name).TryRLock(ctx, distlock.WithTTL(-time.Second))
	bad("a reader with a negative ttl", err)
	_, err = c.TryAcquireAll(ctx, []string{name, name})
	bad("a set naming one name twice", err)
	_, err = c.TryAcquireAll(ctx, nil)
	bad("an empty set", err)
	if n, err := l.Count(ctx); err != nil || n != 0 {
		t.Errorf("the latch after bad input: %d, %v; want 0", n, err)
	}
	if in, err := c.Inspect(ctx, name); err != nil || in.Held || in.Waiters != 0 || in.Kind != engine.Mutex {
		t.Errorf("the lock after bad input: %+v, %v; want a free mutex", in, err)
	}
	// Nothing stored: the name is still free for either shared kind.
	r, err := c.RWMutex(name).TryRLock(ctx)
	if err != nil {
		t.Fatalf("a reader after the bad input: %v", err)
	}
	_ = r.Release(ctx)
}

// kindsTermLimit: a leader elected WithMaxHold (a term limit) loses its
// leadership at the limit, told (ErrMaxHoldExceeded, LostError.At) before
// the waiting candidate is elected with a larger term; the lock is
// released by the Client, not left to its ttl.
func kindsTermLimit(t *testing.T, a, b *distlock.Client, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const name = "term-limit"
	first, err := a.Campaign(ctx, name, "first", distlock.WithTTL(ttl), distlock.WithMaxHold(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.Campaign(ctx, name, "second", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	elected := time.Now()
	if !errors.Is(first.Err(), distlock.ErrMaxHoldExceeded) {
		t.Fatalf("the first leader when the second was elected: %v, want ErrMaxHoldExceeded", first.Err())
	}
	if at := kindsLossAt(first.Lease()); !at.Before(elected) {
		t.Errorf("the first leader told at %v, not before the second's election at %v", at.Format(time.StampMilli), elected.Format(time.StampMilli))
	}
	if second.Term() <= first.Term() {
		t.Errorf("the second term %d not above the first's %d", second.Term(), first.Term())
	}
	_ = second.Resign(ctx)
}

// kindsProclaimOrder: a leader proclaims 30 values in a row through one
// member while an observer on another follows: the observer may skip
// values (it coalesces) but never reports an older one after a newer, nor
// a term going down, and ends on the last.
func kindsProclaimOrder(t *testing.T, leader, observer *distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const name = "proclaim-order"
	ld, err := leader.Campaign(ctx, name, "v00")
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Resign(ctx)
	ch, err := observer.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []distlock.Leader
	go func() {
		for l := range ch {
			mu.Lock()
			seen = append(seen, l)
			mu.Unlock()
		}
	}()
	for i := 1; i <= 30; i++ {
		if err := ld.Proclaim(ctx, fmt.Sprintf("v%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	WaitFor(t, 20*time.Second, "the observer reporting the last value", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0 && seen[len(seen)-1].Value == "v30"
	})
	mu.Lock()
	defer mu.Unlock()
	last := ""
	for _, l := range seen {
		if !l.Elected() {
			continue
		}
		if l.Term != ld.Term() {
			t.Errorf("the observer reported term %d, the leader's is %d", l.Term, ld.Term())
		}
		if l.Value < last {
			t.Errorf("the observer reported %s after %s", l.Value, last)
		}
		last = l.Value
	}
	t.Logf("the observer reported %d of 31 values", len(seen))
}

// kindsSetsOverKinds: AcquireAll and TryAcquireAll over names of which
// one is held as another kind (a reader, a semaphore's permit) are refused
// whole, typed, at once even when waiting, leaving nothing held or queued;
// one behind an election's leader (a mutex) waits, times out and leaves
// nothing; a name whose latch is counting is free for a set, and the
// latch keeps its count. inspect is a Client of the same authority.
func kindsSetsOverKinds(t *testing.T, c []*distlock.Client, inspect *distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ttl := distlock.WithTTL(10 * time.Second)
	r, err := c[1].RWMutex("set-k-reader").RLock(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(ctx)
	p, err := c[1].Semaphore("set-k-sem", 3).Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(ctx)
	ld, err := c[2].Campaign(ctx, "set-k-elect", "leader", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Resign(ctx)
	free := []string{"set-k-a", "set-k-z"}
	nothingLeft := func(how string) {
		t.Helper()
		for _, n := range free {
			in, err := inspect.Inspect(ctx, n)
			if err != nil || in.Held || in.Waiters != 0 {
				t.Errorf("%s: %q left %+v, %v; want free, nobody queued", how, n, in, err)
			}
		}
	}
	var ae *distlock.ArgumentError
	for _, shared := range []string{"set-k-reader", "set-k-sem"} {
		names := []string{free[0], shared, free[1]}
		if s, err := c[0].TryAcquireAll(ctx, names, ttl); !errors.As(err, &ae) {
			t.Errorf("TryAcquireAll over %s: %v, %v; want an *ArgumentError", shared, s, err)
		}
		nothingLeft("TryAcquireAll over " + shared)
		wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
		start := time.Now()
		s, err := c[0].AcquireAll(wctx, names, ttl)
		wcancel()
		if !errors.As(err, &ae) {
			t.Errorf("AcquireAll over %s: %v, %v; want an *ArgumentError", shared, s, err)
		} else if d := time.Since(start); d > 10*time.Second {
			t.Errorf("AcquireAll over %s refused after %v: it waited", shared, d)
		}
		nothingLeft("AcquireAll over " + shared)
	}
	wctx, wcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	s, err := c[0].AcquireAll(wctx, []string{free[0], "set-k-elect", free[1]}, ttl)
	wcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AcquireAll behind a leader: %v, %v; want the deadline's error", s, err)
	}
	WaitFor(t, 10*time.Second, "the timed-out set's names free and unqueued", func() bool {
		for _, n := range append(free, "set-k-elect") {
			in, err := inspect.Inspect(ctx, n)
			if err != nil || in.Waiters != 0 || n != "set-k-elect" && in.Held {
				return false
			}
		}
		return true
	})
	if lead, err := inspect.Leader(ctx, "set-k-elect"); err != nil || lead.Term != ld.Term() {
		t.Errorf("the leader after a set gave up behind it: %+v, %v", lead, err)
	}
	// A name whose shared kind is stored but nobody holds: a set takes it
	// as a mutex; meanwhile the semaphore is refused as a kind, and after
	// the set's release it is kindsServed under its stored limit.
	sp, err := c[1].Semaphore("set-k-stored", 2).Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	_ = sp.Release(ctx)
	s, err = c[0].TryAcquireAll(ctx, []string{"set-k-stored", free[0]}, ttl)
	if err != nil {
		t.Fatalf("a set over a free name whose semaphore kind is stored: %v", err)
	}
	if _, err := c[1].Semaphore("set-k-stored", 2).TryAcquire(ctx, ttl); !errors.As(err, &ae) {
		t.Errorf("a permit of a name a set holds: %v, want an *ArgumentError", err)
	}
	_ = s.Release(ctx)
	sp, err = c[2].Semaphore("set-k-stored", 5).TryAcquire(ctx, ttl, distlock.WithWeight(2))
	if err != nil {
		t.Fatalf("the semaphore after the set's release: %v", err)
	}
	if in, err := inspect.Semaphore("set-k-stored", 5).Inspect(ctx); err != nil || in.Limit != 2 {
		t.Errorf("the semaphore after the set: %+v, %v; want its stored limit 2", in, err)
	}
	_ = sp.Release(ctx)
	latch := c[2].CountDownLatch("set-k-latch")
	if ok, err := latch.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s, err = c[0].TryAcquireAll(ctx, []string{"set-k-latch", free[0]}, ttl)
	if err != nil {
		t.Fatalf("a set over a name whose latch counts: %v", err)
	}
	if n, err := latch.Count(ctx); err != nil || n != 2 {
		t.Errorf("the latch under a set of its name: %d, %v; want 2", n, err)
	}
	_ = s.Release(ctx)
	if n, err := latch.Count(ctx); err != nil || n != 2 {
		t.Errorf("the latch after the set's release: %d, %v; want 2", n, err)
	}
	_ = latch.CountDown(ctx)
	_ = latch.CountDown(ctx)
}

// kindsAdminKinds: the admin calls on the less-travelled kinds.
// ForceRelease of a name whose latch counts frees the lock and leaves the
// latch; of a semaphore's two holders, each told taken over and the next
// permit's token larger; of an election's leader, the waiting candidate
// elected with a larger term and the old leader told. List shows the
// shared lock with its holders; Leaks lists a counting latch (documented)
// and nothing once it reached zero; Inspect of a latch's name is a free
// lock.
func kindsAdminKinds(t *testing.T, c []*distlock.Client, lister engine.Lister, leaks engine.LeakFinder) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ttl := distlock.WithTTL(3 * time.Second)
	const name = "admin-k"
	latch := c[0].CountDownLatch(name)
	if ok, err := latch.TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if in, err := c[1].Inspect(ctx, name); err != nil || in.Held {
		t.Errorf("Inspect of a name whose latch counts: %+v, %v; want a free lock", in, err)
	}
	m, err := c[1].Acquire(ctx, name, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c[2].ForceRelease(ctx, name); err != nil || !ok {
		t.Fatalf("ForceRelease: %v, %v", ok, err)
	}
	if n, err := latch.Count(ctx); err != nil || n != 3 {
		t.Errorf("the latch after a ForceRelease of its name's lock: %d, %v; want 3", n, err)
	}
	WaitFor(t, 3*kindsTTLOf(m), "the force-released mutex holder told", func() bool { return m.Err() != nil })
	lk, _, err := leaks.Leaks(ctx, "", time.Hour, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range lk {
		found = found || l.Name == name || strings.Contains(l.Key, name)
	}
	t.Logf("Leaks with a counting latch: %d item(s), the latch listed: %v", len(lk), found)
	for range 3 {
		if err := latch.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if lk, _, err := leaks.Leaks(ctx, name, time.Hour, "", 1000); err != nil || len(lk) != 0 {
		t.Errorf("Leaks of %q after the latch reached zero and the lock was freed: %+v, %v", name, lk, err)
	}

	// A semaphore's two holders force-released.
	sem := func(i int) *distlock.Semaphore { return c[i].Semaphore("admin-sem", 2) }
	p1, err := sem(0).Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := sem(1).Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	ls, _, err := lister.List(ctx, "admin-sem", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || len(ls[0].Holders) != 2 || ls[0].Kind != engine.Semaphore || ls[0].Limit != 2 {
		t.Errorf("List of a semaphore with two holders: %+v", ls)
	}
	if ok, err := c[2].ForceRelease(ctx, "admin-sem"); err != nil || !ok {
		t.Fatalf("ForceRelease of a semaphore: %v, %v", ok, err)
	}
	p3, err := sem(2).Acquire(ctx, ttl, distlock.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*distlock.Lease{p1, p2} {
		if p3.Token() <= p.Token() {
			t.Errorf("the permit after the force-release: token %d not above %d", p3.Token(), p.Token())
		}
		WaitFor(t, 3*kindsTTLOf(p), "a force-released permit's holder told", func() bool { return p.Err() != nil })
		var lost *distlock.LostError
		if !errors.As(p.Err(), &lost) || lost.Cause != distlock.TakenOver {
			t.Errorf("a force-released permit's holder: %v, want taken over", p.Err())
		}
	}
	// ForceReleaseHolder of an owner that holds nothing: typed, nothing freed.
	var nh *distlock.NotHolderError
	if err := c[2].ForceReleaseHolder(ctx, "admin-sem", "nobody-holds-this"); !errors.As(err, &nh) {
		t.Errorf("ForceReleaseHolder of an owner holding nothing: %v, want a *NotHolderError", err)
	}
	if err := p3.Err(); err != nil {
		t.Errorf("the holder after a ForceReleaseHolder of another owner: %v", err)
	}
	_ = p3.Release(ctx)
	ll := c[0].CountDownLatch("admin-list")
	if ok, err := ll.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ls, _, err := lister.List(ctx, "admin-", "", 100); err != nil || len(ls) != 0 {
		t.Errorf("List with every lock released (a latch counting, a semaphore's kind stored): %+v, %v; want none", ls, err)
	}
	_ = ll.CountDown(ctx)

	// An election's leader force-released: the candidate is elected.
	first, err := c[0].Campaign(ctx, "admin-elect", "first", ttl)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan kindsServed, 1)
	kindsGoWait(ctx, got, "second", func(ctx context.Context) (*distlock.Lease, error) {
		l, err := c[1].Campaign(ctx, "admin-elect", "second", ttl)
		if err != nil {
			return nil, err
		}
		return l.Lease(), nil
	})
	kindsQueuedOn(t, "admin-elect", 1, func() (distlock.Info, error) { return c[2].Inspect(ctx, "admin-elect") })
	if ok, err := c[2].ForceRelease(ctx, "admin-elect"); err != nil || !ok {
		t.Fatalf("ForceRelease of an election: %v, %v", ok, err)
	}
	second := <-got
	if second.err != nil {
		t.Fatal(second.err)
	}
	if second.token <= first.Term() {
		t.Errorf("the term after a force-release %d not above %d", second.token, first.Term())
	}
	WaitFor(t, 3*kindsTTLOf(first.Lease()), "the force-released leader told", func() bool { return first.Err() != nil })
	if err := first.Proclaim(ctx, "first-again"); err == nil {
		t.Error("a force-released leader proclaimed")
	}
	if lead, err := c[2].Leader(ctx, "admin-elect"); err != nil || lead.Value != "second" || lead.Term != second.token {
		t.Errorf("the leader after the force-release: %+v, %v", lead, err)
	}
	_ = second.lease.Release(ctx)
}

func kindsTTLOf(l *distlock.Lease) time.Duration { return l.TTL() + 5*time.Second }

// kindsPausedLeader: a leader whose process stops making calls (its
// engine paused: a stopped process's or a cut-off session's renewals) past
// its ttl while another candidate waits and an observer follows. The
// leader is told (LostError.At) before the other is elected, the new term
// is larger, the observer's terms never go down; once it runs again, the
// deposed leader's Proclaim fails and its Resign frees nothing.
func kindsPausedLeader(t *testing.T, a *distlock.Client, pause, resume func(), ae engine.Engine, b, o *distlock.Client, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const name = "paused-leader"
	first, err := a.Campaign(ctx, name, "first", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := o.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	terms := kindsObserveTerms(ch)
	got := make(chan kindsServed, 1)
	kindsGoWait(ctx, got, "second", func(ctx context.Context) (*distlock.Lease, error) {
		l, err := b.Campaign(ctx, name, "second", distlock.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return l.Lease(), nil
	})
	kindsQueuedOn(t, name, 1, func() (distlock.Info, error) { return o.Inspect(ctx, name) })
	pause()
	second := <-got
	if second.err != nil {
		resume()
		t.Fatal(second.err)
	}
	at := kindsLossAt(first.Lease())
	if !at.Before(second.at) {
		t.Errorf("the paused leader told at %v, not before the next was elected at %v", at.Format(time.StampMilli), second.at.Format(time.StampMilli))
	}
	if second.token <= first.Term() {
		t.Errorf("the new term %d not above %d", second.token, first.Term())
	}
	resume()
	if err := first.Proclaim(ctx, "first-again"); err == nil {
		t.Error("the deposed leader proclaimed after it ran again")
	}
	_ = first.Resign(ctx)
	// What a deposed leader's late requests do to the engine itself (a
	// process whose Client has not looked at its clock yet): nothing.
	owner := first.Lease().Owner()
	if ms, ok := ae.(engine.MetadataSetter); ok {
		if st, err := ms.SetMetadata(ctx, engine.MetadataRequest{Name: name, Owner: owner, Metadata: "first-late"}); err == nil && st == engine.Extended {
			t.Error("the engine set the deposed leader's value over the new leader's")
		}
	}
	if rs, err := ae.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: owner, TTL: ttl}}); err == nil && len(rs) == 1 && rs[0].Status == engine.Extended {
		t.Error("the engine renewed the deposed leader's lease")
	}
	if rr, err := ae.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err == nil {
		t.Logf("the deposed leader's late release: %+v", rr)
	}
	lead, err := o.Leader(ctx, name)
	if err != nil || lead.Value != "second" || lead.Term != second.token {
		t.Errorf("after the deposed leader's Proclaim and Resign: %+v, %v; want the second leading", lead, err)
	}
	if err := second.lease.Err(); err != nil {
		t.Errorf("the new leader lost after the old one's Resign: %v", err)
	}
	terms.until(t, second.token, 20*time.Second)
	_ = second.lease.Release(ctx)
}
