package enginetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// sharer skips the test on an engine without shared locks: one that does
// not implement engine.Sharer, or says it cannot keep them
// (errors.ErrUnsupported: a server or a quorum whose engines keep none).
func (s *suite) sharer(t *testing.T) {
	t.Helper()
	e := s.h.New(t)
	if _, ok := e.(engine.Sharer); !ok {
		t.Skip("the engine keeps no shared locks (engine.Sharer)")
	}
	ctx := ctxTimeout(t, 30*time.Second)
	// A release of nothing, of a shared kind: refused where shared locks
	// are not kept, changing nothing either way.
	probe := engine.ReleaseRequest{Name: lockName(t) + "-probe", Owner: "probe", Kind: engine.RWLock}
	if _, err := e.Release(ctx, probe); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the engine keeps no shared locks: %v", err)
	}
}

// semaphores is sharer for the tests of semaphores with a limit above 1,
// which a quorum refuses (errors.ErrUnsupported: it cannot bound their
// holders across majorities).
func (s *suite) semaphores(t *testing.T) {
	t.Helper()
	s.sharer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := s.h.New(t).(engine.Sharer).SetLimit(ctx, lockName(t)+"-probe", 2); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the engine keeps no semaphores with a limit above 1: %v", err)
	}
}

// semaphoreLimit: never more than limit permits (counting weights) held at
// once, among Clients taking mixed weights; every grant's token is new.
func (s *suite) semaphoreLimit(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	const limit, clients, rounds = 3, 8, 6
	var held, peak atomic.Int64
	var mu sync.Mutex
	tokens := map[uint64]bool{}
	var wg sync.WaitGroup
	for i := range clients {
		c := s.client(t)
		weight := 1 + i%2
		wg.Go(func() {
			sem := c.Semaphore(name, limit)
			for range rounds {
				l, err := sem.Acquire(ctx, distlock.WithWeight(weight), distlock.WithTTL(5*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				now := held.Add(int64(weight))
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				mu.Lock()
				dup := tokens[l.Token()]
				tokens[l.Token()] = true
				mu.Unlock()
				if dup {
					t.Errorf("token %d granted twice", l.Token())
				}
				time.Sleep(time.Millisecond) // the hold: overlap is the point
				held.Add(-int64(weight))
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Fatalf("%d permits held at once, limit %d", p, limit)
	}
	if peak.Load() < 2 {
		t.Logf("peak %d: holders never overlapped (a slow machine?)", peak.Load())
	}
}

// semaphoreExpiry: a holder that stops renewing frees exactly its own
// permits after its ttl; the others keep theirs.
func (s *suite) semaphoreExpiry(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	a, b, c := s.client(t), s.client(t), s.client(t)
	dead, err := a.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(300*time.Millisecond), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	live, err := b.Semaphore(name, 3).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release(ctx)
	got, err := c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release(ctx)
	if time.Now().Before(dead.Deadline()) {
		t.Fatal("the dead holder's permits were granted before its lease ended")
	}
	if live.Err() != nil {
		t.Fatalf("the live holder lost its permit: %v", live.Err())
	}
	info, err := c.Semaphore(name, 3).Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Limit != 3 || len(info.Holders) != 2 || info.Holders[0].Owner != live.Owner() || info.Holders[1].Weight != 2 {
		t.Fatalf("Inspect: %+v", info)
	}
}

// semaphoreFIFO: a weight-3 request at the head is served before a later
// weight-1 request that would fit; TryAcquire says waiters are queued.
func (s *suite) semaphoreFIFO(t *testing.T) {
	s.semaphores(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	a, big, small := s.client(t), s.client(t), s.client(t)
	h, err := a.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	go func() {
		l, err := big.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(3))
		if err != nil {
			t.Error(err)
			order <- "big failed"
			return
		}
		order <- "big"
		_ = l.Release(ctx)
	}()
	WaitFor(t, 20*time.Second, "the big request to queue", func() bool {
		info, err := a.Semaphore(name, 3).Inspect(ctx)
		return err == nil && info.Waiters == 1
	})
	var le *distlock.LockedError
	if _, err := small.Semaphore(name, 3).TryAcquire(ctx); !errors.As(err, &le) || !le.Queued {
		t.Fatalf("TryAcquire of a free permit behind a queued waiter: %v, want a LockedError with Queued", err)
	}
	go func() {
		l, err := small.Semaphore(name, 3).Acquire(ctx)
		if err != nil {
			t.Error(err)
			order <- "small failed"
			return
		}
		order <- "small"
		_ = l.Release(ctx)
	}()
	WaitFor(t, 20*time.Second, "the small request to queue", func() bool {
		info, err := a.Semaphore(name, 3).Inspect(ctx)
		return err == nil && info.Waiters == 2
	})
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if first, second := <-order, <-order; first != "big" || second != "small" {
		t.Fatalf("served %s then %s, want big then small", first, second)
	}
}

// rwReadersShare: readers hold at once; a writer waits for all of them and
// gets a token above every reader's.
func (s *suite) rwReadersShare(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	const readers = 8
	var leases []*distlock.Lease
	var top uint64
	for range readers {
		l, err := s.client(t).RWMutex(name).RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		top = max(top, l.Token())
	}
	w := s.client(t).RWMutex(name)
	if _, err := w.TryLock(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryLock while %d readers hold: %v", readers, err)
	}
	got := make(chan *distlock.Lease, 1)
	go func() {
		l, err := w.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	WaitFor(t, 20*time.Second, "the writer to queue", func() bool {
		info, err := w.Inspect(ctx)
		return err == nil && info.Waiters == 1
	})
	// A reader that comes after the writer queues behind it.
	if _, err := s.client(t).RWMutex(name).TryRLock(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("a reader overtook the queued writer: %v", err)
	}
	for _, l := range leases {
		select {
		case <-got:
			t.Fatal("the writer was granted while readers held")
		default:
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	if l.Token() <= top {
		t.Fatalf("writer token %d, readers' up to %d", l.Token(), top)
	}
	info, _ := w.Inspect(ctx)
	if len(info.Holders) != 1 || info.Holders[0].Weight != engine.RWPermits || info.Kind != engine.RWLock {
		t.Fatalf("Inspect with the writer: %+v", info)
	}
	_ = l.Release(ctx)
}

// rwNoWriterStarvation: with readers re-acquiring in a loop, a writer is
// granted, and no reader that asked after the writer queued gets the lock
// before it.
func (s *suite) rwNoWriterStarvation(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	stop := make(chan struct{})
	var queuedAt atomic.Int64 // when the writer was seen queued (UnixNano)
	var overtook atomic.Int64
	var writerToken atomic.Uint64
	var wg sync.WaitGroup
	for range 6 {
		rw := s.client(t).RWMutex(name)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				asked := time.Now().UnixNano()
				l, err := rw.RLock(ctx)
				if err != nil {
					return
				}
				if q := queuedAt.Load(); q != 0 && asked > q && (writerToken.Load() == 0 || l.Token() < writerToken.Load()) {
					overtook.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
				_ = l.Release(ctx)
			}
		})
	}
	w := s.client(t).RWMutex(name)
	WaitFor(t, 20*time.Second, "readers to hold", func() bool {
		info, err := w.Inspect(ctx)
		return err == nil && info.Held
	})
	got := make(chan *distlock.Lease, 1)
	go func() {
		l, err := w.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		if l != nil {
			writerToken.Store(l.Token())
		}
		got <- l
	}()
	WaitFor(t, 20*time.Second, "the writer to queue", func() bool {
		info, err := w.Inspect(ctx)
		if err == nil && info.Waiters > 0 {
			queuedAt.CompareAndSwap(0, time.Now().UnixNano())
		}
		return queuedAt.Load() != 0
	})
	var l *distlock.Lease
	select {
	case l = <-got:
	case <-ctx.Done():
		t.Fatal("the writer starved")
	}
	close(stop)
	if l != nil {
		_ = l.Release(ctx)
	}
	wg.Wait()
	if n := overtook.Load(); n > 0 {
		t.Fatalf("%d readers that asked after the writer queued were granted before it", n)
	}
}

// rwUpgradeRefused: the owner of a read lease asking for the write side
// gets ErrUpgrade, and nothing changes.
func (s *suite) rwUpgradeRefused(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	rw := s.client(t).RWMutex(name)
	r, err := rw.RLock(ctx, distlock.WithOwner("me"))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := rw.Inspect(ctx)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := rw.Lock(wctx, distlock.WithOwner("me")); !errors.Is(err, distlock.ErrUpgrade) || !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("upgrade: %v, want ErrUpgrade", err)
	}
	after, _ := rw.Inspect(ctx)
	if len(after.Holders) != 1 || after.Holders[0] != before.Holders[0] && after.Holders[0].Count != before.Holders[0].Count || after.Waiters != 0 {
		t.Fatalf("the refused upgrade changed the lock: %+v -> %+v", before, after)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A read lease used to release the write lock that followed it: a
	// typed error, and the writer keeps the lock.
	w, err := s.client(t).RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("the read lease released again while a writer holds: %v, want ErrNotHeld", err)
	}
	if e := s.h.New(t); true {
		if res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: r.Owner(), Kind: engine.RWLock}); err != nil || res.Status == engine.Released {
			t.Fatalf("a release by the reader's owner while a writer holds: %+v, %v", res, err)
		}
	}
	if info, _ := rw.Inspect(ctx); len(info.Holders) != 1 || info.Holders[0].Owner != w.Owner() || w.Err() != nil {
		t.Fatalf("the reader's releases disturbed the writer: %+v, %v", info, w.Err())
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A mutex and a shared lock of one name do not mix.
	m, err := s.client(t).Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	if _, err := rw.TryRLock(ctx); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("RLock of a name held as a mutex: %v, want ErrInvalidArgument", err)
	}
}

// rwDeadReaderExpires: a reader that stops renewing holds the writer back
// for its own ttl only.
func (s *suite) rwDeadReaderExpires(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 20*time.Second)
	name := lockName(t)
	dead, err := s.client(t).RWMutex(name).RLock(ctx, distlock.WithTTL(300*time.Millisecond), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.client(t).RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if time.Now().Before(dead.Deadline()) {
		t.Fatal("the writer was granted before the dead reader's lease ended")
	}
}
