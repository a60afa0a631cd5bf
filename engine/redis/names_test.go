package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestLeadingBraceRefused: a name that starts with '}' would leave the hash
// tag of the lock's keys empty, so Cluster would hash them into different
// slots. The engine refuses it (engine.NameChecker), a Client reports an
// *ArgumentError before any call, and no key is written; the same name is
// fine elsewhere (the embedded engine's conformance run takes it).
func TestLeadingBraceRefused(t *testing.T) {
	rs := redistest.Start(t)
	eng, err := redisengine.New(rs.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	var ee *engine.ArgumentError
	if err := engine.CheckName(eng, "}x"); !errors.As(err, &ee) || ee.Arg != "name" {
		t.Fatalf("CheckName(}x) = %v, want an *engine.ArgumentError for name", err)
	}
	if err := engine.CheckName(eng, "x}"); err != nil {
		t.Fatalf("CheckName(x}) = %v, want nil", err)
	}
	c := distlock.New(eng)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ae *distlock.ArgumentError
	if _, err := c.Acquire(ctx, "}x"); !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("Acquire(}x) = %v, want an *ArgumentError", err)
	}
	if _, err := c.Inspect(ctx, "}x"); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("Inspect(}x) = %v, want ErrInvalidArgument", err)
	}
	keys, err := rs.Client().Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("a refused name wrote keys: %v", keys)
	}
}
