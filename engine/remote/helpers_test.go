package remote_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/distlock/distlock/engine/memory"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newMemory returns an embedded engine, closed when the test ends.
func newMemory(t *testing.T) *memory.Engine {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	return mem
}
