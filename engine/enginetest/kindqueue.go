package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// kindQueueBinds: queued waiters bind a name to their kind, as holders do.
// While a name has live waiters of one kind queued (the mutex's queue, or
// a shared lock's), a request of another kind is refused with the
// *ArgumentError of a name used as that kind (engine.KindError), never
// granted and never contention, to a try and to a waiting call alike; the
// queued waiter then gets the name.
//
//   - MutexHead: a mutex waiter heads the queue of a held name (fair where
//     the engine keeps fair queues: the release reserves the name for it);
//     the holder releases. A semaphore's TryAcquire, an RW read's TryRLock,
//     a waiting semaphore Acquire and a semaphore's SetLimit are refused,
//     nothing is granted or stored, and the head then takes the mutex.
//   - SharedWaiter: a semaphore waiter asking for every permit, or an RW
//     writer, waits behind the holder of every permit; the holder releases.
//     A mutex's TryAcquire, a waiting Acquire and a set (AcquireAll) with
//     the name are refused, and the queued waiter then takes its permits.
//
// The waiters are entered straight on an engine of the backend (Waiter,
// WaiterTTL a minute), so nobody tries again in the window and the
// reservation is there when the other kind asks. An engine without a
// waiter queue or shared locks skips.
func (s *suite) kindQueueBinds(t *testing.T) {
	s.sharer(t)
	t.Run("MutexHead", s.kindQueueMutexHead)
	t.Run("SharedWaiter", func(t *testing.T) {
		for _, k := range []string{"semaphore", "rw-write"} {
			t.Run(k, func(t *testing.T) { s.kindQueueSharedWaiter(t, k) })
		}
	})
}

// kindQueueLimit is the semaphores' limit: 3, or 1 on an engine that keeps
// no semaphore with a limit above 1 (a quorum).
func (s *suite) kindQueueLimit(t *testing.T, ctx context.Context, e engine.Engine) int {
	t.Helper()
	if _, err := e.(engine.Sharer).SetLimit(ctx, lockName(t)+"-probe", 3); errors.Is(err, errors.ErrUnsupported) {
		return 1
	}
	return 3
}

// wantKindRefusal fails the test unless err is the *ArgumentError of a
// request of kind asked on name bound to kind is (and l is nil).
func wantKindRefusal(t *testing.T, ctx context.Context, what string, l *distlock.Lease, err error, name string, is, asked engine.Kind) {
	t.Helper()
	if l != nil {
		_ = l.Release(ctx)
		t.Fatalf("%s: granted (token %d)", what, l.Token())
	}
	var ae *distlock.ArgumentError
	if !errors.Is(err, distlock.ErrInvalidArgument) || !errors.As(err, &ae) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("%s: %v, want an *ArgumentError", what, err)
	}
	if want := engine.KindError(name, is, asked).(*engine.ArgumentError).Reason; ae.Arg != "name" || ae.Reason != want {
		t.Fatalf("%s: %s %q, want name %q", what, ae.Arg, ae.Reason, want)
	}
}

// waitQueued waits until Inspect of name on e shows n waiters (a quorum's
// stragglers land after the call that sent them returned).
func waitQueued(t *testing.T, ctx context.Context, e engine.Engine, name string, n int) {
	t.Helper()
	WaitFor(t, 20*time.Second, fmt.Sprintf("%d waiter(s) queued on %s", n, name), func() bool {
		info, err := e.Inspect(ctx, name)
		return err == nil && info.Waiters == n
	})
}

func (s *suite) kindQueueMutexHead(t *testing.T) {
	e, _ := s.queuer(t, false)
	ctx := ctxTimeout(t, 60*time.Second)
	limit := s.kindQueueLimit(t, ctx, e)
	name := lockName(t)
	// An explicit owner: a quorum answers its grant once every node did.
	h, err := s.client(t).Acquire(ctx, name, distlock.WithTTL(time.Minute), distlock.WithOwner("holder-"+name))
	if err != nil {
		t.Fatal(err)
	}
	order := engine.OrderDefault
	if engine.CapabilitiesOf(e).Fair {
		order = engine.OrderFair // the release reserves the name for the head
	}
	head := engine.AcquireRequest{Name: name, Owner: "head", Attempt: "head-1", TTL: time.Minute, Waiting: true,
		Waiter: "head", WaiterTTL: time.Minute, Order: order}
	g, err := e.Acquire(ctx, head)
	if err != nil || g.Acquired || !g.Queued || !g.Head {
		t.Fatalf("the mutex waiter's entry: %+v, %v", g, err)
	}
	waitQueued(t, ctx, e, name, 1)
	// The release reserves the free name for the head for engine.ReserveTTL;
	// a reservation the head lets lapse drops it from the queue, and then
	// it binds nothing. A check that finds the name unbound after that long
	// proves nothing: the machine was too slow to judge ("machine too slow").
	released := time.Now()
	lapsed := func(what string, l *distlock.Lease, bound bool) {
		t.Helper()
		if since := time.Since(released); !bound && since >= engine.ReserveTTL {
			if l != nil {
				_ = l.Release(ctx)
			}
			t.Skipf("machine too slow: %s came %v after the release, past the head's reservation (%v)", what, since, engine.ReserveTTL)
		}
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other := s.client(t)
	refused := func(what string, l *distlock.Lease, err error, asked engine.Kind) {
		t.Helper()
		lapsed(what, l, errors.Is(err, distlock.ErrInvalidArgument))
		wantKindRefusal(t, ctx, what, l, err, name, engine.Mutex, asked)
	}
	l, err := other.Semaphore(name, limit).TryAcquire(ctx, distlock.WithTTL(time.Minute))
	refused("a semaphore's try while a mutex waiter heads the queue", l, err, engine.Semaphore)
	l, err = other.RWMutex(name).TryRLock(ctx, distlock.WithTTL(time.Minute))
	refused("an RW read's try while a mutex waiter heads the queue", l, err, engine.RWLock)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	l, err = other.Semaphore(name, limit).Acquire(wctx, distlock.WithTTL(time.Minute))
	cancel()
	refused("a semaphore's waiting acquire while a mutex waiter heads the queue", l, err, engine.Semaphore)
	err = other.Semaphore(name, limit).SetLimit(ctx, limit)
	refused("a semaphore's SetLimit while a mutex waiter heads the queue", nil, err, engine.Semaphore)
	info, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != engine.Mutex || info.Held || len(info.Holders) != 0 || info.Waiters != 1 {
		lapsed("the Inspect after the refusals", nil, false)
		t.Fatalf("after the refusals: kind %v, held %v, holders %+v, %d waiters; want the free mutex with its one waiter",
			info.Kind, info.Held, info.Holders, info.Waiters)
	}
	// The head, trying again, gets the mutex it waited for.
	head.Attempt = "head-2"
	if g, err = e.Acquire(ctx, head); err != nil || !g.Acquired {
		t.Fatalf("the queued head's next attempt: %+v, %v; want the mutex", g, err)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "head"}); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) kindQueueSharedWaiter(t *testing.T, kind string) {
	e, _ := s.queuer(t, false)
	ctx := ctxTimeout(t, 60*time.Second)
	name := lockName(t)
	holder := s.client(t)
	r := engine.AcquireRequest{Name: name, Owner: "waiter", Attempt: "waiter-1", TTL: time.Minute, Waiting: true,
		Waiter: "waiter", WaiterTTL: time.Minute}
	var h *distlock.Lease
	var err error
	if kind == "semaphore" {
		limit := s.kindQueueLimit(t, ctx, e)
		h, err = holder.Semaphore(name, limit).Acquire(ctx, distlock.WithWeight(limit), distlock.WithTTL(time.Minute))
		r.Kind, r.Limit, r.Weight = engine.Semaphore, limit, limit
	} else {
		h, err = holder.RWMutex(name).Lock(ctx, distlock.WithTTL(time.Minute))
		r.Kind, r.Limit, r.Weight = engine.RWLock, engine.RWPermits, engine.RWPermits
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.Acquire(ctx, r)
	if err != nil || g.Acquired || !g.Queued || !g.Head {
		t.Fatalf("the %s waiter's entry: %+v, %v", kind, g, err)
	}
	waitQueued(t, ctx, e, name, 1)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other := s.client(t)
	l, err := other.TryAcquire(ctx, name, distlock.WithTTL(time.Minute))
	wantKindRefusal(t, ctx, "a mutex's try while a "+kind+" waiter is queued", l, err, name, r.Kind, engine.Mutex)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	l, err = other.Acquire(wctx, name, distlock.WithTTL(time.Minute))
	cancel()
	wantKindRefusal(t, ctx, "a mutex's waiting acquire while a "+kind+" waiter is queued", l, err, name, r.Kind, engine.Mutex)
	wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	set, err := other.AcquireAll(wctx, []string{name, name + "-other"}, distlock.WithTTL(time.Minute))
	cancel()
	if set != nil {
		_ = set.Release(ctx)
		t.Fatalf("a set with the name while a %s waiter is queued: granted", kind)
	}
	wantKindRefusal(t, ctx, "a set with the name while a "+kind+" waiter is queued", nil, err, name, r.Kind, engine.Mutex)
	info, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != r.Kind || info.Held || len(info.Holders) != 0 || info.Waiters != 1 {
		t.Fatalf("after the refusals: kind %v, held %v, holders %+v, %d waiters; want the free %s with its one waiter",
			info.Kind, info.Held, info.Holders, info.Waiters, kind)
	}
	// The waiter, trying again, gets its permits.
	r.Attempt = "waiter-2"
	if g, err = e.Acquire(ctx, r); err != nil || !g.Acquired {
		t.Fatalf("the queued %s waiter's next attempt: %+v, %v; want its permits", kind, g, err)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "waiter", Kind: r.Kind}); err != nil {
		t.Fatal(err)
	}
}
