package engine

import (
	"context"
	"errors"
	"testing"
)

// TestAcquireByKind: a mutex goes to the mutex path untouched; a shared
// kind to the shared path with its Order cleared, or, on
// an engine without one, to UnsupportedKind (errors.ErrUnsupported); bad
// kind fields reach neither path.
func TestAcquireByKind(t *testing.T) {
	var got []AcquireRequest
	path := func(_ context.Context, r AcquireRequest) (Grant, error) {
		got = append(got, r)
		return Grant{Acquired: true}, nil
	}
	ctx := context.Background()
	mutex := AcquireRequest{Name: "n", Order: OrderFair}
	if g, err := AcquireByKind(ctx, mutex, path, nil); err != nil || !g.Acquired || got[0] != mutex {
		t.Fatalf("mutex: %+v, %v, passed %+v", g, err, got)
	}
	shared := AcquireRequest{Name: "n", Kind: RWLock, Weight: 1, Order: OrderFair}
	if _, err := AcquireByKind(ctx, shared, nil, path); err != nil || got[1].Order != OrderDefault || got[1].Kind != RWLock {
		t.Fatalf("shared: %v, passed %+v", err, got[1])
	}
	if _, err := AcquireByKind(ctx, shared, path, nil); !errors.Is(err, errors.ErrUnsupported) || len(got) != 2 {
		t.Fatalf("shared on a mutex-only engine: %v (%d calls)", err, len(got))
	}
	var ae *ArgumentError
	if _, err := AcquireByKind(ctx, AcquireRequest{Kind: 7}, path, path); !errors.As(err, &ae) || ae.Arg != "kind" || len(got) != 2 {
		t.Fatalf("kind 7: %v (%d calls)", err, len(got))
	}
	for _, r := range []AcquireRequest{{Order: OrderNoReserve + 1}, {Kind: Semaphore, Weight: 1, Order: 9}} {
		if _, err := AcquireByKind(ctx, r, path, path); !errors.As(err, &ae) || ae.Arg != "order" || len(got) != 2 {
			t.Fatalf("%+v: %v (%d calls)", r, err, len(got))
		}
	}
}

// TestOrder: only OrderBehind and OrderFair stay behind the queue, and
// every order has a name.
func TestOrder(t *testing.T) {
	for o, want := range map[Order]bool{OrderDefault: false, OrderBehind: true, OrderFair: true, OrderNoReserve: false, 4: false} {
		if o.Yields() != want {
			t.Errorf("%s.Yields() = %v", o, o.Yields())
		}
	}
	if s := Order(4).String(); s != "order(4)" {
		t.Errorf("Order(4) is %q", s)
	}
}

// TestLeaveByKind: a mutex's waiter leaves by the mutex path, a shared
// lock's (either shared kind) by the shared path with its request
// untouched, or, on an engine without one, gets UnsupportedKind
// (errors.ErrUnsupported); an unknown kind reaches neither path.
func TestLeaveByKind(t *testing.T) {
	var mutexes, shareds []LeaveRequest
	mutex := func(_ context.Context, r LeaveRequest) error { mutexes = append(mutexes, r); return nil }
	shared := func(_ context.Context, r LeaveRequest) error { shareds = append(shareds, r); return nil }
	ctx := context.Background()
	for _, r := range []LeaveRequest{{Name: "n", Waiter: "w"}, {Name: "n", Waiter: "w", Kind: Semaphore}, {Name: "n", Waiter: "w", Kind: RWLock}} {
		if err := LeaveByKind(ctx, r, mutex, shared); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	if len(mutexes) != 1 || mutexes[0].Kind != Mutex || len(shareds) != 2 || shareds[0].Kind != Semaphore || shareds[1].Kind != RWLock {
		t.Fatalf("paths taken: mutex %+v, shared %+v", mutexes, shareds)
	}
	if err := LeaveByKind(ctx, LeaveRequest{Name: "n", Waiter: "w", Kind: RWLock}, mutex, nil); !errors.Is(err, errors.ErrUnsupported) || err.Error() != UnsupportedKind(RWLock).Error() {
		t.Fatalf("shared on a mutex-only engine: %v", err)
	}
	var ae *ArgumentError
	if err := LeaveByKind(ctx, LeaveRequest{Name: "n", Waiter: "w", Kind: 9}, mutex, shared); !errors.As(err, &ae) || ae.Arg != "kind" {
		t.Fatalf("kind 9: %v", err)
	}
	if len(mutexes) != 1 || len(shareds) != 2 {
		t.Fatalf("a refused leave reached a path: mutex %+v, shared %+v", mutexes, shareds)
	}
}

// TestCheckKind: the fields each kind takes pass, and the mutex fast path
// allocates nothing.
func TestCheckKind(t *testing.T) {
	for _, r := range []AcquireRequest{
		{}, {Weight: 1},
		{Kind: Semaphore, Limit: 3, Weight: 2}, {Kind: Semaphore, Weight: 1},
		{Kind: RWLock, Weight: 1}, {Kind: RWLock, Limit: RWPermits, Weight: RWPermits},
	} {
		if err := CheckKind(&r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	r := AcquireRequest{Name: "n"}
	if n := testing.AllocsPerRun(100, func() { _ = CheckKind(&r) }); n != 0 {
		t.Errorf("CheckKind of a mutex allocates %v times", n)
	}
}

// TestDescribe: the view Inspect gives of a name whose mutex and shared
// lock are kept apart, and the views of one kind (MutexView, SharedView).
func TestDescribe(t *testing.T) {
	held := Info{Name: "n", Held: true, Owner: "o", HighWater: 5}
	free := Info{Name: "n", HighWater: 7}
	sem := Info{Name: "n", Kind: Semaphore, Limit: 2, Held: true, Holders: []Holder{{Owner: "p", Weight: 1}}, HighWater: 6}
	stored := Info{Name: "n", Kind: Semaphore, Limit: 2}
	rwWaited := Info{Name: "n", Kind: RWLock, Limit: RWPermits, Waiters: 1}
	mutexWaited := Info{Name: "n", Waiters: 2, HighWater: 5}
	for _, tc := range []struct {
		what          string
		mutex, shared Info
		kind          Kind
		held          bool
	}{
		{"a held mutex, no shared lock", held, Info{Name: "n"}, Mutex, true},
		{"a held mutex, a stored free semaphore", held, stored, Mutex, true},
		{"a held semaphore", free, sem, Semaphore, true},
		{"a stored free semaphore", free, stored, Semaphore, false},
		{"nothing", free, Info{Name: "n"}, Mutex, false},
		{"a held mutex, an RW lock's writer waiting", held, rwWaited, Mutex, true},
		{"a free name, an RW lock's writer waiting", free, rwWaited, RWLock, false},
		{"a waited-for mutex, an RW lock's writer waiting", mutexWaited, rwWaited, RWLock, false},
		{"a held semaphore, mutex waiters", mutexWaited, sem, Semaphore, true},
	} {
		got := Describe(tc.mutex, tc.shared)
		if got.Kind != tc.kind || got.Held != tc.held || got.HighWater != max(tc.mutex.HighWater, tc.shared.HighWater) {
			t.Errorf("%s: %+v", tc.what, got)
		}
	}
	if got := Describe(held, stored).SharedView(); got.Held || got.Kind != Mutex || got.HighWater != 5 {
		t.Errorf("a held mutex narrowed to its shared lock: %+v", got)
	}
	if got := sem.SharedView(); got.Kind != Semaphore || !got.Held {
		t.Errorf("a semaphore narrowed to itself: %+v", got)
	}
}
