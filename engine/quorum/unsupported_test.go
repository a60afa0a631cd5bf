package quorum_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// plainNode is an engine that keeps no shared locks (no engine.Sharer)
// but raises fences, as a quorum's node must.
type plainNode struct {
	engine.Engine
	engine.FenceRaiser
}

// TestSharedKindUnsupported: on a quorum with a node that keeps no shared
// locks, every shared operation is refused with the error of every engine
// that lacks a kind (engine.UnsupportedKind: errors.ErrUnsupported, the
// kind named), before anything is sent: no node keeps a trace. A Client
// reports it as an *distlock.UnsupportedError; the mutex still works.
func TestSharedKindUnsupported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mems := []*memory.Engine{memory.New(), memory.New(), memory.New()}
	nodes := []engine.Engine{mems[0], mems[1], plainNode{mems[2], mems[2]}}
	q, err := quorum.New(nodes, withTestTimeout(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	refused := func(what string, kind engine.Kind, err error) {
		t.Helper()
		want := engine.UnsupportedKind(kind).Error()
		if !errors.Is(err, errors.ErrUnsupported) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q (errors.ErrUnsupported)", what, err, want)
		}
	}
	for _, r := range []engine.AcquireRequest{
		{Name: "s", Owner: "o", TTL: time.Second, Kind: engine.Semaphore, Limit: 1, Weight: 1},
		{Name: "s", Owner: "o", TTL: time.Second, Kind: engine.RWLock, Weight: 1},
	} {
		_, err := q.Acquire(ctx, r)
		refused("acquire "+r.Kind.String(), r.Kind, err)
		_, err = q.Release(ctx, engine.ReleaseRequest{Name: "s", Owner: "o", Kind: r.Kind})
		refused("release "+r.Kind.String(), r.Kind, err)
	}
	_, err = q.SetLimit(ctx, "s", 1)
	refused("set-limit", engine.Semaphore, err)
	for i, m := range mems {
		if info, err := m.Inspect(ctx, "s"); err != nil || info.Kind != engine.Mutex || info.Held || info.Waiters != 0 {
			t.Fatalf("node %d after the refusals: %+v, %v", i, info, err)
		}
	}

	c := distlock.New(q)
	defer c.Close()
	var ue *distlock.UnsupportedError
	if _, err := c.RWMutex("rw").TryRLock(ctx); !errors.As(err, &ue) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("a Client's read lock: %v, want an *UnsupportedError", err)
	}
	l, err := c.TryAcquire(ctx, "s")
	if err != nil {
		t.Fatalf("the mutex on the same quorum: %v", err)
	}
	_ = l.Release(ctx)
}
