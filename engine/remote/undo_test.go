package remote_test

import (
	"testing"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server"
)

// TestUndoForgetsKind: engine.ReleaseRequest.Undo goes over the wire (the
// release body's undo), so a server on an engine that honours it forgets
// the kind of a shared lock an undone grant leaves empty.
func TestUndoForgetsKind(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	enginetest.UndoForgetsKind(t, newRemote(t, url))
}

// TestUndoKeepsQueuePlace: the undo goes over the wire for every kind, so
// a server on an engine that honours it puts back in the queue a waiter
// whose grant (a mutex's or an RW lock's) is undone.
func TestUndoKeepsQueuePlace(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	enginetest.UndoKeepsQueuePlace(t, newRemote(t, url))
}
