package distlock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// TestDoReleasesOnPanic: a panic in Do's (and DoAll's) fn releases the
// lock before it goes on up the stack, so a caller that recovers it (as
// net/http recovers a handler's) does not keep the lock held and renewed
// for the Client's life (found by an outside tester: another client was
// refused 6 ttls after the panic).
func TestDoReleasesOnPanic(t *testing.T) {
	ctx := context.Background()
	eng := memory.New()
	c, other := distlock.New(eng), distlock.New(eng)
	defer c.Close()
	defer other.Close()
	boom := errors.New("boom")
	calls := map[string]func(fn func(context.Context) error) error{
		"Do": func(fn func(context.Context) error) error { return c.Do(ctx, "a", fn) },
		"DoAll": func(fn func(context.Context) error) error {
			return c.DoAll(ctx, []string{"a", "b"}, fn)
		},
	}
	for call, run := range calls {
		recovered := func() (v any) {
			defer func() { v = recover() }()
			_ = run(func(context.Context) error { panic(boom) })
			return nil
		}()
		if recovered != boom {
			t.Fatalf("%s: recovered %v, want fn's panic", call, recovered)
		}
		l, err := other.TryAcquire(ctx, "a")
		if err != nil {
			t.Fatalf("%s: after fn's panic another client is refused: %v", call, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
