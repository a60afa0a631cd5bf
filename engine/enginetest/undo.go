package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// UndoForgetsKind checks engine.ReleaseRequest.Undo on e, an engine that
// honours it: a reader's grant released with Undo, leaving nobody, leaves
// no kind behind (a semaphore is granted on the name next); released
// without it, the name stays an RW lock, as after any release; and an
// undone grant beside another reader, or with a waiter queued, keeps the
// kind for them.
func UndoForgetsKind(t *testing.T, e engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := func(name, owner string) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute,
			Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}
	}
	sem := func(name string) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: "sem", Attempt: "sem", TTL: time.Minute,
			Kind: engine.Semaphore, Limit: 1, Weight: 1}
	}
	grant := func(r engine.AcquireRequest) {
		t.Helper()
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("%s on %s: %+v, %v", r.Owner, r.Name, g, err)
		}
	}
	release := func(name, owner string, undo bool) {
		t.Helper()
		r := engine.ReleaseRequest{Name: name, Owner: owner, Kind: engine.RWLock, Undo: undo}
		if res, err := e.Release(ctx, r); err != nil || res.Status != engine.Released {
			t.Fatalf("release %+v: %+v, %v", r, res, err)
		}
	}
	kindKept := func(name, what string) {
		t.Helper()
		var ae *engine.ArgumentError
		if g, err := e.Acquire(ctx, sem(name)); !errors.As(err, &ae) {
			t.Fatalf("%s: a semaphore on the name: %+v, %v; want the RW lock's kind refusal", what, g, err)
		}
	}

	undone := lockName(t) + "-undone"
	grant(read(undone, "r"))
	release(undone, "r", true)
	grant(sem(undone)) // the kind went with the undone grant

	kept := lockName(t) + "-kept"
	grant(read(kept, "r"))
	release(kept, "r", false)
	kindKept(kept, "after a plain release")

	beside := lockName(t) + "-beside"
	grant(read(beside, "r1"))
	grant(read(beside, "r2"))
	release(beside, "r2", true)
	kindKept(beside, "after an undone grant beside another reader")

	queued := lockName(t) + "-queued"
	grant(read(queued, "r"))
	w := engine.AcquireRequest{Name: queued, Owner: "writer", Attempt: "w", TTL: time.Minute, Waiter: "writer",
		WaiterTTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: engine.RWPermits}
	if g, err := e.Acquire(ctx, w); err != nil || g.Acquired || !g.Queued {
		t.Fatalf("a writer behind the reader: %+v, %v; want it queued", g, err)
	}
	release(queued, "r", true)
	kindKept(queued, "after an undone grant with a writer queued")
	if g, err := e.Acquire(ctx, w); err != nil || !g.Acquired {
		t.Fatalf("the queued writer after the undone read: %+v, %v", g, err)
	}
}

// UndoKeepsQueuePlace checks that an Undo of a grant that took a waiter
// out of the queue puts the waiter back in its place, on e, an engine that
// honours Undo (a quorum's node that granted a waiter when the others
// refused takes the grant back), for each kind that queues:
//   - rwlock: a writer queued behind a reader, and a reader queued behind
//     the writer; the first reader releases, the writer is granted and its
//     grant undone. The writer heads the queue again, so the queued reader
//     is refused (it would overtake the writer), and the writer is granted
//     next. Without it, the reader heads the queue and is granted: a writer
//     counted waiting is passed by a later reader.
//   - mutex: two fair waiters queued behind the holder; the holder
//     releases, the first is granted and its grant undone. The second is
//     refused (the first, fair, heads the queue again), and the first is
//     granted next.
func UndoKeepsQueuePlace(t *testing.T, e engine.Engine) {
	t.Helper()
	t.Run("rwlock", func(t *testing.T) {
		undoKeepsQueuePlace(t, e, func(owner string, weight int) engine.AcquireRequest {
			return engine.AcquireRequest{Owner: owner, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: weight}
		})
	})
	t.Run("mutex", func(t *testing.T) {
		undoKeepsQueuePlace(t, e, func(owner string, _ int) engine.AcquireRequest {
			return engine.AcquireRequest{Owner: owner, Order: engine.OrderFair}
		})
	})
}

// undoKeepsQueuePlace runs UndoKeepsQueuePlace for one kind: kind returns
// the request of owner, of the lock's kind, for weight permits (a
// writer's: engine.RWPermits) where the kind counts them.
func undoKeepsQueuePlace(t *testing.T, e engine.Engine, kind func(owner string, weight int) engine.AcquireRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := lockName(t)
	req := func(owner string, weight int) engine.AcquireRequest {
		r := kind(owner, weight)
		r.Name, r.Attempt, r.TTL, r.Waiter, r.WaiterTTL = name, owner, time.Minute, owner, time.Minute
		return r
	}
	release := func(owner string, undo bool) {
		t.Helper()
		r := req(owner, 1)
		if res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner, Kind: r.Kind, Undo: undo}); err != nil || res.Status != engine.Released {
			t.Fatalf("%s's release (undo %v): %+v, %v", owner, undo, res, err)
		}
	}
	first, second := req("first", engine.RWPermits), req("second", 1)
	holder := req("holder", 1)
	holder.Waiter = ""
	if g, err := e.Acquire(ctx, holder); err != nil || !g.Acquired {
		t.Fatalf("the holder: %+v, %v", g, err)
	}
	for _, r := range []engine.AcquireRequest{first, second} {
		if g, err := e.Acquire(ctx, r); err != nil || g.Acquired || !g.Queued {
			t.Fatalf("%s behind the holder: %+v, %v; want it queued", r.Owner, g, err)
		}
	}
	release("holder", false)
	if g, err := e.Acquire(ctx, first); err != nil || !g.Acquired {
		t.Fatalf("the first waiter at the head: %+v, %v", g, err)
	}
	release("first", true)
	if g, err := e.Acquire(ctx, second); err != nil || g.Acquired {
		t.Fatalf("the second waiter, after the first one's grant was undone: %+v, %v; want it refused, the first ahead", g, err)
	}
	if g, err := e.Acquire(ctx, first); err != nil || !g.Acquired {
		t.Fatalf("the first waiter back at the head: %+v, %v", g, err)
	}
}
