package quorum

import (
	"context"
	"sync"

	"github.com/distlock/distlock/engine"
)

// flight follows the nodes of one grant whose answers were still out when
// Acquire returned (it returns as soon as the outcome is decided). Each late
// answer is settled once the outcome is known:
//
//   - grant kept: a late grant stays (it adds redundancy to the lease and is
//     renewed with it), given the grant's fencing token when it minted a
//     lower one (a one-node phase 2; not WithoutFencing; a higher one
//     stays, as a raise never lowers a token); a late failure is
//     released there in the background, since the command may still land
//     (a paused node); a waiter refused there leaves that node's queue;
//   - grant dropped: every late grant or failure is released there (an
//     Undo); a waiter that left meanwhile, refused there, leaves that
//     node's queue again, and so after the Undo of its grant there;
//   - the lease was released meanwhile: a late grant is released there with
//     the release's id, after its answer, so the release cannot overtake it.
//
// Only one-off owners are released by owner (see exactHold); an explicit
// owner's late grants are left to expire.
type flight struct {
	e   *Engine
	req engine.AcquireRequest

	mu       sync.Mutex
	decided  bool
	outcome  grantOutcome    // the grant's (grantDropped until decided)
	token    uint64          // the grant's token (when kept)
	early    []nodeResult    // answers that came before the decision
	pending  int             // answers still out, once decided
	answered []chan struct{} // by node: closed by its late answer (nil: no wait)
	order    []releaseOrder  // by node: whether the release stopped waiting for the answer
	released string          // the release's id, once the lease was released
}

// grantOutcome is what became of the grant a flight follows, which
// decides how its late answers are settled.
type grantOutcome uint8

const (
	// grantDropped: the grant failed (or is not decided yet): every late
	// grant or failure is released.
	grantDropped grantOutcome = iota
	// grantKept: the grant was acquired: a late grant stays.
	grantKept
)

// releaseOrder tells whether the lease's release can reach a node before
// the node's late grant.
type releaseOrder uint8

const (
	// releaseAfterGrant: the release's call to the node waited for the
	// late answer, and goes after it (also where nothing was released
	// yet, or there was no answer to wait for).
	releaseAfterGrant releaseOrder = iota
	// releaseMayOvertake: the release's call to the node stopped waiting
	// for the answer (its context ended): it may reach the node before
	// the grant.
	releaseMayOvertake
)

// nodeResult is a late answer with the index of its node.
type nodeResult struct {
	node int
	x    result[engine.Grant]
}

// late takes node i's answer after Acquire stopped waiting for it.
func (f *flight) late(i int, x result[engine.Grant]) {
	f.mu.Lock()
	if !f.decided {
		f.early = append(f.early, nodeResult{i, x})
		f.mu.Unlock()
		return
	}
	f.pending--
	last := f.pending == 0
	outcome, token, released := f.outcome, f.token, f.released
	order := releaseAfterGrant
	if f.answered != nil && f.answered[i] != nil {
		close(f.answered[i])
		order = f.order[i]
	}
	f.mu.Unlock()
	f.settle(i, x, outcome, token, released, order)
	if last {
		f.e.flights.forget(f)
	}
}

// decide records the outcome of the grant g (kept when acquired), given
// the answers Acquire had (rs), and settles the late answers that came
// before it. A kept grant with answers still out is registered, so that
// Release finds it.
func (f *flight) decide(rs []result[engine.Grant], g engine.Grant) {
	outcome := grantDropped
	if g.Acquired {
		outcome = grantKept
	}
	fl := &f.e.flights
	fl.mu.Lock()
	f.mu.Lock()
	out := 0
	for _, x := range rs {
		if !x.done {
			out++
		}
	}
	f.decided, f.outcome, f.token = true, outcome, g.Token
	f.pending = out - len(f.early)
	early := f.early
	f.early = nil
	if outcome == grantKept && f.pending > 0 {
		f.order = make([]releaseOrder, len(rs))
		f.answered = make([]chan struct{}, len(rs))
		for i, x := range rs {
			if !x.done && !answeredEarly(early, i) {
				f.answered[i] = make(chan struct{})
			}
		}
		if fl.m == nil {
			fl.m = make(map[grantKey]*flight)
		}
		fl.m[grantKey{f.req.Name, f.req.Owner}] = f
	}
	f.mu.Unlock()
	fl.mu.Unlock()
	for _, a := range early {
		f.settle(a.node, a.x, outcome, g.Token, "", releaseAfterGrant)
	}
}

// release marks the lease released: answers still out are released after
// they come, with id.
func (f *flight) release(id string) {
	f.mu.Lock()
	f.released = id
	f.mu.Unlock()
}

// waitNode waits until node i's grant answered, so that a release sent
// after it cannot overtake the grant on that node. When ctx ends first, the
// late answer's settlement releases the grant there.
func (f *flight) waitNode(ctx context.Context, i int) {
	ch := f.answer(i)
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
		f.mu.Lock()
		select {
		case <-ch: // answered meanwhile: the release goes after it
		default:
			f.order[i] = releaseMayOvertake
		}
		f.mu.Unlock()
	}
}

// answer returns the channel closed by node i's late answer, or nil when
// there is none to wait for.
func (f *flight) answer(i int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answered == nil || f.answered[i] == nil {
		return nil
	}
	return f.answered[i]
}

// seen waits until node i's late answer came, or ctx ends; unlike
// waitNode it changes nothing about how the answer is settled.
func (f *flight) seen(ctx context.Context, i int) {
	if ch := f.answer(i); ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

func answeredEarly(early []nodeResult, i int) bool {
	for _, a := range early {
		if a.node == i {
			return true
		}
	}
	return false
}

// settle acts on node i's late answer x, given the grant's outcome and
// token. released is the release's id when the lease was released before
// the answer came; order tells whether the release's call to node i
// stopped waiting for the answer.
func (f *flight) settle(i int, x result[engine.Grant], outcome grantOutcome, token uint64, released string, order releaseOrder) {
	r := f.req
	granted := x.err == nil && x.v.Acquired
	if !granted && (outcome == grantKept || f.e.hasLeft(r.Name, r.Waiter)) {
		// A waiter that was granted, or that left, may be queued there
		// (refused); a waiter that left is queued again by an undo there
		// (cleaner.leaveAgain).
		f.e.leaveNode(i, r)
	}
	switch {
	case x.err == nil && !x.v.Acquired:
		// held by another owner there: nothing of ours
	case !exactHold(r):
		// An explicit owner may hold the lock there already (re-entry):
		// a release could drop that hold instead. A grant that landed
		// stays, and expires with its ttl unless renewed.
	case released != "" && granted && order == releaseAfterGrant:
		// the release reaches node i after this grant
	case released != "":
		f.e.cleaners[i].add(engine.ReleaseRequest{Name: r.Name, Owner: r.Owner}, released, r.TTL)
	case outcome == grantKept && granted:
		// A lower token of the node's own is raised to the grant's
		// (align). A higher one stays, since a raise never lowers
		// one: the token proposed is ahead of the clock by more than the
		// per-node timeout (proposalAhead), so a node that answers in
		// time mints the grant's token unless its clock or high-water is
		// ahead. With phase 2 off (WithoutFencing) tokens are not aligned
		// anywhere: a late node keeps the token it minted.
		if x.v.Token < token && !f.e.noFencing {
			f.align(i, token)
		}
	default:
		// The grant was dropped (its late grant there is taken back as an
		// Undo, which puts back the queue entry it took), or the node
		// failed: the command may still land there.
		f.e.cleaners[i].takeBack(r, outcome == grantDropped)
	}
}

// align records the grant's token on node i, which granted late with a
// token of its own below it, so that every node's record of the grant has
// the one token (Engine.alignNode: a one-node phase 2; where the raise
// fails otherwise than by a refusal, the node's grant is released).
func (f *flight) align(i int, token uint64) { f.e.alignNode(i, f.req, token) }

// flights tracks the kept grants whose late answers are still out, by lock
// name and owner.
type flights struct {
	mu sync.Mutex
	m  map[grantKey]*flight
}

// lookup returns the flight of owner's grant on name, if answers are out.
func (fl *flights) lookup(name, owner string) *flight {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.m[grantKey{name, owner}]
}

// onName returns the flights of every owner's grant on name.
func (fl *flights) onName(name string) []*flight {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	var out []*flight
	for k, f := range fl.m {
		if k.name == name {
			out = append(out, f)
		}
	}
	return out
}

// forget drops f once its last answer is in.
func (fl *flights) forget(f *flight) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	k := grantKey{f.req.Name, f.req.Owner}
	if fl.m[k] == f {
		delete(fl.m, k)
	}
}
