package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// undoRecorder is a queuedAcquire node that records the Undo mark of each
// release it is sent.
type undoRecorder struct {
	queuedAcquire
	undos chan bool
}

func (u undoRecorder) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	select {
	case u.undos <- r.Undo:
	default:
	}
	return u.Engine.Release(ctx, r)
}

// TestLateMinorityGrantKeepsQueuePlace: a waiter queued on three embedded
// nodes (as a quorum's waiters queue: never reserved for, not fair); the holder is gone from the third node only, and the
// waiter's next attempt is refused by the other two while its grant on the
// third lands after the attempt was decided (a node slower than the
// per-node timeout). The quorum takes that late grant back with an Undo
// release, so the third node puts the waiter back in its queue place:
// afterwards it holds nothing there and still has the waiter queued. A
// plain release would leave that node's queue without it, and a waiter
// that queued later would head it and take that node's wake-ups.
func TestLateMinorityGrantKeepsQueuePlace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mems := []*memory.Engine{memory.New(), memory.New(), memory.New()}
	for _, m := range mems {
		t.Cleanup(func() { _ = m.Close() })
	}
	gates := make(chan gate, 2)
	slow := undoRecorder{queuedAcquire{Engine: mems[2], gates: gates}, make(chan bool, 8)}
	q, err := quorum.New([]engine.Engine{mems[0], mems[1], slow}, quorum.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	const name = "late"
	for _, m := range mems {
		if g, err := m.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "h", Attempt: "h", TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatalf("the holder: %+v, %v", g, err)
		}
	}
	w := engine.AcquireRequest{Name: name, Owner: "w", Attempt: "w1", TTL: time.Minute, OneOff: true, Waiting: true,
		Waiter: "w", WaiterTTL: time.Minute, Order: engine.OrderNoReserve}
	lateMinorityGrant(t, ctx, q, mems[2], gates, w)
	select {
	case undo := <-slow.undos:
		if !undo {
			t.Errorf("the late grant of the failed attempt was released without Undo")
		}
	case <-ctx.Done():
		t.Fatal("the late grant of the failed attempt was not released")
	}
	var info engine.Info
	if !eventually(20*time.Second, func() bool {
		info, err = mems[2].Inspect(ctx, name)
		return err == nil && !info.Held
	}) {
		t.Fatalf("the third node: %+v, %v; want the late grant released", info, err)
	}
	if info.Waiters != 1 {
		t.Fatalf("the third node after the late grant was taken back: %+v; want the waiter queued again", info)
	}
}

// lateMinorityGrant runs waiter w's two attempts on q, whose third node is
// third (its acquires held back by gates), while "h" holds the name on
// every node: the first, refused everywhere, queues w; the holder then
// releases on the third node only, and the second attempt (attempt "w2")
// is refused by the other two and granted by the third after the attempt
// failed. It returns once that late grant landed.
func lateMinorityGrant(t *testing.T, ctx context.Context, q *quorum.Engine, third *memory.Engine, gates chan<- gate, w engine.AcquireRequest) {
	t.Helper()
	name := w.Name
	first := newGate()
	close(first.open)
	gates <- first
	if g, err := q.Acquire(ctx, w); err != nil || g.Acquired {
		t.Fatalf("the waiter's first attempt, every node held: %+v, %v; want refused", g, err)
	}
	<-first.landed
	if info, err := third.Inspect(ctx, name); err != nil || info.Waiters != 1 {
		t.Fatalf("the third node after the first attempt: %+v, %v; want the waiter queued", info, err)
	}
	if res, err := third.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "h"}); err != nil || res.Status != engine.Released {
		t.Fatalf("the holder's release on the third node: %+v, %v", res, err)
	}
	late := newGate()
	gates <- late
	w.Attempt = "w2"
	if g, err := q.Acquire(ctx, w); err != nil || g.Acquired {
		t.Fatalf("the waiter's second attempt, two nodes held: %+v, %v; want refused", g, err)
	}
	close(late.open) // the third node grants now, after the attempt failed
	<-late.landed
}
