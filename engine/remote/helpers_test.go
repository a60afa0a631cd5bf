package remote_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newMemory returns an embedded engine, closed when the test ends.
func newMemory(t *testing.T) *memory.Engine {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	return mem
}

// releaseWakes takes name on eng and releases it, and fails the test
// unless sub is woken within 10s.
func releaseWakes(t *testing.T, ctx context.Context, eng engine.Engine, name string, sub engine.Subscription) {
	t.Helper()
	g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", TTL: time.Second, Attempt: "o"})
	if err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	if _, err := eng.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up for a release")
	}
}
