package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// heldUndo is a queuedAcquire node with a queue (engine.Queuer) whose
// Undo releases wait until undo is closed (or their caller's context ends,
// a failed call): the take-back of a late grant reaching the node after
// the waiter's Leave.
type heldUndo struct {
	queuedAcquire
	queue engine.Queuer
	undo  <-chan struct{}
}

func (h heldUndo) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return h.queue.SubscribeWaiter(ctx, name, waiter)
}

func (h heldUndo) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return h.queue.Leave(ctx, r)
}

func (h heldUndo) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if r.Undo {
		select {
		case <-h.undo:
		case <-ctx.Done():
			return engine.ReleaseResult{}, ctx.Err()
		}
	}
	return h.Engine.Release(ctx, r)
}

// leftWaiterSetup is three embedded nodes holding name for "h", the third
// one's acquires held back by gates and its Undo releases by undo, and a
// quorum over them.
func leftWaiterSetup(t *testing.T, ctx context.Context, name string) (mems []*memory.Engine, q *quorum.Engine, gates chan gate, undo chan struct{}) {
	t.Helper()
	mems = []*memory.Engine{memory.New(), memory.New(), memory.New()}
	for _, m := range mems {
		t.Cleanup(func() { _ = m.Close() })
	}
	gates, undo = make(chan gate, 2), make(chan struct{})
	q, err := quorum.New([]engine.Engine{mems[0], mems[1], heldUndo{queuedAcquire{Engine: mems[2], gates: gates}, mems[2], undo}},
		quorum.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	for _, m := range mems {
		if g, err := m.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "h", Attempt: "h", TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatalf("the holder: %+v, %v", g, err)
		}
	}
	return mems, q, gates, undo
}

// waitingRequest is a quorum waiter's attempt (never reserved for), with
// a heartbeat ttl far past the test, so that only a Leave can take its
// entry out of a queue.
func waitingRequest(name, attempt string) engine.AcquireRequest {
	return engine.AcquireRequest{Name: name, Owner: "w", Attempt: attempt, TTL: time.Minute, OneOff: true, Waiting: true,
		Waiter: "w", WaiterTTL: time.Minute, Order: engine.OrderNoReserve}
}

// TestLeftWaiterNotQueuedByLateRefusal: a waiter's attempt is refused by
// two nodes and gives up (Leave) while its acquire is still on the way to
// the third, which refuses it too, after the Leave, and queues it there.
// The quorum takes that entry out again: nobody runs the waiter, and that
// node's releases would wake it instead of the waiters behind it until its
// heartbeat deadline. It fails without the Leave after a late refusal
// (flight.settle).
func TestLeftWaiterNotQueuedByLateRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const name = "left-refused"
	mems, q, gates, undo := leftWaiterSetup(t, ctx, name)
	close(undo)
	late := newGate()
	gates <- late
	w := waitingRequest(name, "w1")
	if g, err := q.Acquire(ctx, w); err != nil || g.Acquired {
		t.Fatalf("the waiter's attempt, every node held: %+v, %v; want refused", g, err)
	}
	if err := q.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: w.Waiter}); err != nil {
		t.Fatal(err)
	}
	close(late.open) // the third node refuses now, after the Leave
	<-late.landed
	var info engine.Info
	var err error
	if !eventually(10*time.Second, func() bool {
		info, err = mems[2].Inspect(ctx, name)
		return err == nil && info.Waiters == 0
	}) {
		t.Fatalf("the third node: %+v, %v; want nobody queued (the waiter left)", info, err)
	}
}

// TestLeftWaiterNotQueuedByLateUndo: a queued waiter's attempt is refused
// by two nodes and granted late by the third (its holder had gone from it
// only), which takes the waiter's entry; the waiter gives up (Leave, which
// finds nothing there: the grant took the entry), and the quorum's Undo of
// that late grant, which reaches the node after the Leave, puts the entry
// back. The quorum leaves the node's queue again after the Undo. It fails
// without the cleaner's leaveAgain.
func TestLeftWaiterNotQueuedByLateUndo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const name = "left-undone"
	mems, q, gates, undo := leftWaiterSetup(t, ctx, name)
	w := waitingRequest(name, "w1")
	lateMinorityGrant(t, ctx, q, mems[2], gates, w)
	if info, err := mems[2].Inspect(ctx, name); err != nil || !info.Held || info.Waiters != 0 {
		t.Fatalf("the third node after its late grant: %+v, %v; want held, the entry taken", info, err)
	}
	if err := q.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: w.Waiter}); err != nil {
		t.Fatal(err)
	}
	close(undo) // the Undo reaches the third node after the Leave
	var info engine.Info
	var err error
	if !eventually(20*time.Second, func() bool {
		info, err = mems[2].Inspect(ctx, name)
		return err == nil && !info.Held && info.Waiters == 0
	}) {
		t.Fatalf("the third node: %+v, %v; want the late grant taken back and nobody queued (the waiter left)", info, err)
	}
}
