package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server/api"
)

// deposingEngine is the embedded engine with a hook that runs once, just
// before the next SetMetadata or Release reaches the engine: after any
// check the server made first.
type deposingEngine struct {
	*memory.Engine
	mu     sync.Mutex
	before func()
}

func (e *deposingEngine) arm(f func()) {
	e.mu.Lock()
	e.before = f
	e.mu.Unlock()
}

func (e *deposingEngine) fire() {
	e.mu.Lock()
	f := e.before
	e.before = nil
	e.mu.Unlock()
	if f != nil {
		f()
	}
}

func (e *deposingEngine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	e.fire()
	return e.Engine.SetMetadata(ctx, r)
}

func (e *deposingEngine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	e.fire()
	return e.Engine.Release(ctx, r)
}

// ReleaseOnce is Release's deposing too (the embedded engine's own is
// promoted otherwise).
func (e *deposingEngine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	e.fire()
	return e.Engine.ReleaseOnce(ctx, r, id)
}

// TestElectionDeposedBetweenCheckAndWrite: a leader's proclaim and resign
// over HTTP while it is deposed at the last moment (force-released, and
// its owner elected again under a newer term, just before the server's
// write reaches the engine): the stale term is refused (409 not_held,
// held_by_other) and the newer term keeps its value and its hold. Before,
// the server checked the term with an Inspect and then wrote by owner: the
// proclaim set the newer leader's value and the resign dropped its hold.
func TestElectionDeposedBetweenCheckAndWrite(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	eng := &deposingEngine{Engine: mem}
	s := start(t, eng)
	const owner = "node-a"
	leader := func() api.LeaderInfo {
		t.Helper()
		r := call(t, "GET", electionURL(s, "e", ""), "", nil)
		want(t, "leader", r, 200, "")
		return api.LeaderInfo{Value: r.json(t)["value"].(string), Term: num(t, r, "term")}
	}
	var newer uint64
	depose := func() {
		ctx := context.Background()
		if ok, err := mem.ForceRelease(ctx, "e"); err != nil || !ok {
			t.Errorf("force-release: %v, %v", ok, err)
		}
		g, err := mem.Acquire(ctx, engine.AcquireRequest{Name: "e", Owner: owner, Attempt: "again", TTL: time.Minute,
			Metadata: "new", Announce: true})
		if err != nil || !g.Acquired {
			t.Errorf("the owner's new campaign: %+v, %v", g, err)
		}
		newer = g.Token
	}

	a := call(t, "POST", electionURL(s, "e", "campaign"), "", map[string]any{"value": "old", "owner": owner, "ttl_ms": 60000})
	want(t, "campaign", a, 200, "")
	old := num(t, a, "token")

	eng.arm(depose)
	r := call(t, "POST", electionURL(s, "e", "proclaim"), "", map[string]any{"owner": owner, "term": old, "value": "stale"})
	want(t, "the deposed term's proclaim", r, 409, api.CodeNotHeld)
	if st := r.errField(t, "status"); st != api.StatusHeldByOther {
		t.Fatalf("the deposed term's proclaim: status %v, want %s: %s", st, api.StatusHeldByOther, r.body)
	}
	if l := leader(); l.Value != "new" || l.Term != newer || newer <= old {
		t.Fatalf("after the deposed term's proclaim: %+v, want new in term %d (above %d)", l, newer, old)
	}

	// Deposed again at the last moment before its resign.
	old = newer
	eng.arm(depose)
	r = call(t, "POST", electionURL(s, "e", "resign"), "", map[string]any{"owner": owner, "term": old})
	want(t, "the deposed term's resign", r, 409, api.CodeNotHeld)
	if l := leader(); l.Value != "new" || l.Term != newer || newer <= old {
		t.Fatalf("after the deposed term's resign: %+v, want new in term %d (above %d)", l, newer, old)
	}

	// The current term proclaims and resigns.
	want(t, "the current term's proclaim", call(t, "POST", electionURL(s, "e", "proclaim"), "", map[string]any{"owner": owner, "term": newer, "value": "v2"}), 200, "")
	if l := leader(); l.Value != "v2" || l.Term != newer {
		t.Fatalf("after the current term's proclaim: %+v", l)
	}
	want(t, "the current term's resign", call(t, "POST", electionURL(s, "e", "resign"), "", map[string]any{"owner": owner, "term": newer}), 200, "")
	want(t, "no leader", call(t, "GET", electionURL(s, "e", ""), "", nil), 404, api.CodeNoLeader)
}
