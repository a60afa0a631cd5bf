package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// TestEngineNameRuleThroughServer: a server checks names with the rule of
// every engine (engine.ValidateName: a leading '}' is refused on the
// embedded engine as on Redis), and a Client on the remote engine gets the
// refusal as an *ArgumentError, not as a backend failure to retry; a
// waiting Acquire returns at once.
func TestEngineNameRuleThroughServer(t *testing.T) {
	_, url := startServer(t, memory.New())
	c := distlock.New(newRemote(t, url))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ae *distlock.ArgumentError
	if _, err := c.Acquire(ctx, "}x"); !errors.As(err, &ae) || ae.Arg != "name" || errors.Is(err, distlock.ErrBackend) {
		t.Fatalf("Acquire(}x) = %v, want an *ArgumentError for name", err)
	}
	if _, err := c.Inspect(ctx, "}x"); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("Inspect(}x) = %v, want ErrInvalidArgument", err)
	}
	if _, err := c.TryAcquire(ctx, "x}"); err != nil {
		t.Fatalf("TryAcquire(x}) = %v", err)
	}
}
