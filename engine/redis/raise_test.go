package redis_test

import (
	"testing"

	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestSharedRaiseBounds: RaiseFence of a shared holder within engine.CheckRaise
// (shared_raise_fence.lua).
func TestSharedRaiseBounds(t *testing.T) {
	e, err := redisengine.New(redistest.Start(t).Client())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	enginetest.SharedRaiseBounds(t, e)
}

// TestUndoForgetsKind: engine.ReleaseRequest.Undo forgets the kind of a
// shared lock it leaves empty (shared_release.lua).
func TestUndoForgetsKind(t *testing.T) {
	e, err := redisengine.New(redistest.Start(t).Client())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	enginetest.UndoForgetsKind(t, e)
}

// TestUndoKeepsQueuePlace: an Undo of a grant that took a waiter out of
// the queue puts the waiter back in its place (shared_release.lua,
// sh_requeue).
func TestUndoKeepsQueuePlace(t *testing.T) {
	e, err := redisengine.New(redistest.Start(t).Client())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	enginetest.UndoKeepsQueuePlace(t, e)
}
