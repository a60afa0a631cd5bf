package memory_test

import (
	"testing"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
)

// TestSharedRaiseBounds: RaiseFence of a shared holder within engine.CheckRaise.
func TestSharedRaiseBounds(t *testing.T) {
	e := memory.New()
	defer e.Close()
	enginetest.SharedRaiseBounds(t, e)
}

// TestUndoForgetsKind: engine.ReleaseRequest.Undo forgets the kind of a
// shared lock it leaves empty.
func TestUndoForgetsKind(t *testing.T) {
	e := memory.New()
	defer e.Close()
	enginetest.UndoForgetsKind(t, e)
}

// TestUndoKeepsQueuePlace: an Undo of a grant that took a waiter out of
// the queue puts the waiter back in its place.
func TestUndoKeepsQueuePlace(t *testing.T) {
	e := memory.New()
	defer e.Close()
	enginetest.UndoKeepsQueuePlace(t, e)
}
