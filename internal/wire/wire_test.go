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
