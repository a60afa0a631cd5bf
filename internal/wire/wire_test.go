package wire

import (
	"errors"
	"testing"

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
