package quorum_test

import (
	"context"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// TestLatchUnsupported: the quorum keeps no countdown latches (a count
// changed on majorities is not a count: docs/API.md, "Why not on a
// quorum"), although its nodes do; a Client on it answers every latch
// call with an *UnsupportedError and changes no node.
func TestLatchUnsupported(t *testing.T) {
	nodes := []engine.Engine{memory.New(), memory.New(), memory.New()}
	for _, n := range nodes {
		t.Cleanup(func() { _ = n.Close() })
	}
	q, err := quorum.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.LatchUnsupported(t, q)
	ctx := context.Background()
	for i, n := range nodes {
		if k, err := n.(engine.Latcher).Count(ctx, "l"); k != 0 || err != nil {
			t.Fatalf("node %d's count: %d %v, want 0", i, k, err)
		}
	}
}
