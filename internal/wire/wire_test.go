package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// TestRelease: a release body round-trips through the wire with its kind;
// the field before Kind (Shared) still reads as a shared lock's release;
// a bad kind, or a mutex's kind marked shared, is an *engine.ArgumentError.
func TestRelease(t *testing.T) {
	for _, k := range []engine.Kind{engine.Mutex, engine.Semaphore, engine.RWLock} {
		r := engine.ReleaseRequest{Name: "n", Owner: "o", Kind: k}
		if got, err := Release("n", ReleaseBody(r)); err != nil || got != r {
			t.Errorf("%s: %+v, %v", k, got, err)
		}
	}
	if got, err := Release("n", api.ReleaseRequest{Owner: "o", Shared: true}); err != nil || !got.Kind.Shared() {
		t.Errorf("shared without kind: %+v, %v", got, err)
	}
	var ae *engine.ArgumentError
	for _, b := range []api.ReleaseRequest{{Owner: "o", Kind: "latch"}, {Owner: "o", Kind: api.KindMutex, Shared: true}} {
		if _, err := Release("n", b); !errors.As(err, &ae) {
			t.Errorf("%+v: %v, want an *engine.ArgumentError", b, err)
		}
	}
}

// TestExtend: an extension round-trips through the wire; a shared lock's
// item keeps a shared kind (the wire says only "shared").
func TestExtend(t *testing.T) {
	for _, r := range []engine.ExtendRequest{
		{Name: "n", Owner: "o", TTL: time.Second},
		{Name: "n", Owner: "w", TTL: 3 * time.Second, Waiter: true, Kind: engine.Semaphore},
	} {
		if got := Extend("n", ExtendItem(r), r.TTL); got != r {
			t.Errorf("%+v came back as %+v", r, got)
		}
	}
	if got := ExtendItem(engine.ExtendRequest{Name: "n", Owner: "o", TTL: time.Microsecond}); got.TTLMs != 1 {
		t.Errorf("a ttl under 1 ms is sent as %d ms, want 1", got.TTLMs)
	}
}

// TestAcquireBody: the kind fields go on the wire by name (a semaphore's
// limit and weight, an RW lock's mode), a mutex's kind is omitted, and a
// shared request never announces.
func TestAcquireBody(t *testing.T) {
	r := engine.AcquireRequest{Name: "n", Owner: "o", TTL: time.Second, Announce: true}
	if b := AcquireBody(r); b.Kind != "" || !b.Announce || b.TTLMs != 1000 || b.Mode != "" {
		t.Errorf("mutex: %+v", b)
	}
	r.Kind, r.Limit, r.Weight = engine.Semaphore, 3, 2
	if b := AcquireBody(r); b.Kind != api.KindSemaphore || b.Limit != 3 || b.Weight != 2 || b.Announce {
		t.Errorf("semaphore: %+v", b)
	}
	r.Kind, r.Limit, r.Weight = engine.RWLock, engine.RWPermits, engine.RWPermits
	if b := AcquireBody(r); b.Kind != api.KindRWLock || b.Mode != api.ModeWrite || b.Limit != 0 || b.Weight != 0 {
		t.Errorf("writer: %+v", b)
	}
}

// TestSetLockBody: a set's lock goes on the wire with its owner, attempt,
// metadata and ttl in whole milliseconds (at least 1).
func TestSetLockBody(t *testing.T) {
	r := engine.AcquireRequest{Name: "n", Owner: "o", Attempt: "a", TTL: 1500 * time.Millisecond, Metadata: "m"}
	if b := SetLockBody(r); b != (api.SetLock{Name: "n", Owner: "o", Attempt: "a", TTLMs: 1500, Metadata: "m"}) {
		t.Errorf("%+v", b)
	}
	if r.TTL = time.Microsecond; SetLockBody(r).TTLMs != 1 {
		t.Errorf("a ttl under 1 ms is sent as %d ms, want 1", SetLockBody(r).TTLMs)
	}
}

// TestLeave: a leave round-trips through the wire with its kind (the wire
// says only "shared": a shared lock's waiter comes back with a shared
// kind, as every engine leaves a semaphore's and an RW lock's alike).
func TestLeave(t *testing.T) {
	for _, k := range []engine.Kind{engine.Mutex, engine.Semaphore, engine.RWLock} {
		r := engine.LeaveRequest{Name: "n", Waiter: "w", Kind: k}
		b := LeaveBody(r)
		got := Leave("n", b)
		if b.Shared != k.Shared() || got.Name != r.Name || got.Waiter != r.Waiter || got.Kind.Shared() != k.Shared() {
			t.Errorf("%s: body %+v came back as %+v", k, b, got)
		}
	}
}

// TestOrderOf: the wire's three queue flags read as one engine.Order, and
// AcquireBody writes back flags that read as the same order; no_reserve
// with fair or behind is an *engine.ArgumentError.
func TestOrderOf(t *testing.T) {
	for _, c := range []struct {
		b    api.AcquireRequest
		want engine.Order
	}{
		{api.AcquireRequest{}, engine.OrderDefault},
		{api.AcquireRequest{Behind: true}, engine.OrderBehind},
		{api.AcquireRequest{Fair: true}, engine.OrderFair},
		{api.AcquireRequest{Fair: true, Behind: true}, engine.OrderFair},
		{api.AcquireRequest{NoReserve: true}, engine.OrderNoReserve},
	} {
		if got, err := OrderOf(c.b); err != nil || got != c.want {
			t.Errorf("%+v: %s, %v; want %s", c.b, got, err, c.want)
		}
		if back, err := OrderOf(AcquireBody(engine.AcquireRequest{Order: c.want})); err != nil || back != c.want {
			t.Errorf("%s through AcquireBody: %s, %v", c.want, back, err)
		}
	}
	var ae *engine.ArgumentError
	for _, b := range []api.AcquireRequest{{NoReserve: true, Fair: true}, {NoReserve: true, Behind: true}} {
		if _, err := OrderOf(b); !errors.As(err, &ae) || ae.Arg != "no_reserve" {
			t.Errorf("%+v: %v, want an *engine.ArgumentError for no_reserve", b, err)
		}
	}
}
