package quorum

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// Shared locks on a quorum (engine.Sharer).
//
// A reader-writer lock is safe on a quorum for the reason the mutex is:
// every conflict is between two holders (a writer and anyone), each node
// refuses one of the two, and any two majorities share a node. A writer
// holds all of a node's permits, so no majority can grant a reader (or
// another writer) while a writer holds a majority.
//
// A semaphore with a limit above 1 is not: its conflicts are among
// limit+1 holders at once, and per-node limits do not bound them across
// majorities. With 5 nodes and limit 2, permits granted on nodes {1,2,3},
// {3,4,5} and {1,2,4} make 3 holders, while no node admits more than 2.
// It is refused (ErrSemaphoreLimit). A semaphore with a limit of 1 is
// served: each node admits one holder, so it excludes like the mutex (and
// stays a semaphore, so code that moves between engines keeps working).
//
// Fencing follows the mutex's two phases: the grant's token is the highest
// its majority minted, and phase 2 raises the high-water to it on a
// majority (engine.FenceRaiser, of the shared kind), conditional on still holding there.
// A writer's token is then above every earlier reader's and writer's, and
// a reader's above every earlier writer's. Readers that hold at once may
// share a token (each node mints its own, and two readers' majorities can
// take their maximum from different nodes): on a quorum a reader's token
// orders it after the writers, it does not tell readers apart.
//
// The queue is each node's (see queue.go): a request enters every node's
// queue of the name, each node grants only its own head, and a waiter that
// is granted on a minority only (the nodes disagree on the head) has its
// grants released and re-enters those queues at the back, after a random
// pause, which reorders the contenders until one heads a majority.

var _ engine.Sharer = (*Engine)(nil)

// ErrSemaphoreLimit is returned for a semaphore with a limit above 1: a
// quorum cannot bound its holders (see docs/REDLOCK.md). It wraps
// errors.ErrUnsupported, which a Client reports as an
// *distlock.UnsupportedError.
var ErrSemaphoreLimit = fmt.Errorf("quorum: a semaphore with a limit above 1 cannot be kept on a quorum: "+
	"per-node limits do not bound the holders across majorities (see docs/REDLOCK.md); "+
	"use one lock authority (a Redis, or a distlock server) for semaphores: %w", errors.ErrUnsupported)

// sharers refuses a shared kind before anything is sent when a node keeps
// no shared locks (is no engine.Sharer): with engine.UnsupportedKind, the
// refusal of every engine that lacks the kind, naming the node.
func (e *Engine) sharers(kind engine.Kind) error {
	for _, n := range e.nodes {
		if _, ok := n.eng.(engine.Sharer); !ok {
			return fmt.Errorf("%w (quorum node %s, %T)", engine.UnsupportedKind(kind), n.name, n.eng)
		}
	}
	return nil
}

// checkLimit refuses a semaphore limit the quorum cannot keep.
func checkLimit(kind engine.Kind, limit int) error {
	if kind == engine.Semaphore && limit > 1 {
		return fmt.Errorf("%w (limit %d)", ErrSemaphoreLimit, limit)
	}
	return nil
}

// acquireShared is Acquire for a shared kind: phase 1 on every node, then
// phase 2 (fencing) on the nodes that granted, counted against the
// validity measured from before the first send. A grant on fewer than a
// majority is released at once.
//
// It returns as the mutex's does (acquireMutex): for a one-off owner (and
// any owner with WithFailFast) as soon as the outcome is decided
// (acquireDecided); the answers still out are settled when they come
// (sharedFlight). This engine's releases of the name that have nodes still
// out reach each node before this grant does.
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := checkLimit(r.Kind, r.Limit); err != nil {
		return engine.Grant{}, err
	}
	if err := e.sharers(r.Kind); err != nil {
		return engine.Grant{}, err
	}
	e.propose(&r)
	var stop func([]result[engine.Grant], int) bool
	var late func(int, result[engine.Grant])
	var f *sharedFlight
	if (e.failFast || exactHold(r)) && len(e.nodes) > 1 {
		f = &sharedFlight{e: e, req: r}
		stop = func(rs []result[engine.Grant], _ int) bool { return e.acquireDecided(rs) }
		late = f.late
	}
	start := time.Now()
	rs := each(ctx, e, e.timeout(r.TTL), afterReleases(e, r.Name, func(ctx context.Context, n node) (engine.Grant, error) {
		return n.eng.Acquire(ctx, r)
	}), stop, late)
	g, err := e.decide(ctx, r, rs, start)
	if f != nil {
		f.decide(rs, g)
	}
	return g, err
}

// sharedRefusal returns the refusal of the request by the nodes (an
// acquire's: another kind, limit or weight, an upgrade, for a mutex a name
// held as a shared lock; a release's: a hold of the other shared kind)
// when a majority of them made one: the request is wrong, not the
// nodes. A minority's refusal is a node behind the others (one that missed
// the release of the name's other kind, say), outvoted as any minority is:
// the request is then refused as contended, or fails for want of a
// quorum.
func sharedRefusal[T any](e *Engine, rs []result[T]) error {
	var first error
	n := 0
	for _, x := range rs {
		var ae *engine.ArgumentError
		switch {
		case !x.done || x.err == nil:
			continue
		case errors.Is(x.err, engine.ErrUpgrade):
			if first == nil {
				first = engine.ErrUpgrade
			}
		case errors.As(x.err, &ae):
			if first == nil {
				first = ae
			}
		default:
			continue
		}
		n++
	}
	if n < e.majority {
		return nil
	}
	return first
}

// dropShared drops the hold a failed grant took on the nodes that
// granted it. Where the outcome is unknown (no answer, an error) the grant,
// if it landed, expires with its ttl.
func (e *Engine) dropShared(ctx context.Context, r engine.AcquireRequest, rs []result[engine.Grant]) {
	each(context.WithoutCancel(ctx), e, e.timeout(0), func(ctx context.Context, n node) (bool, error) {
		x := rs[e.index(n)]
		if !x.done || x.err != nil || !x.v.Acquired {
			return false, nil
		}
		_, err := n.eng.Release(ctx, engine.ReleaseRequest{Name: r.Name, Owner: r.Owner, Kind: r.Kind, Undo: true})
		return true, err
	}, nil, nil)
}

// releaseShared is Release for a shared kind: on every node concurrently,
// answered as a mutex's release is (releaseOutcome): released when a
// majority released the hold, or any node did among mixed answers, but
// not held when a majority says the owner holds nothing there (one node's
// late hold, as the straggler of an earlier release, is not the owner's
// lock).
//
// It returns once the outcome is decided (releaseDecided), as the mutex's
// does; this engine's next acquire of the name reaches each node after
// that node's answer (releasing). The release's call to a node whose
// answer to the grant was still out waits for that answer first, and the
// grant is released there once it comes if that wait ended first
// (sharedFlight).
func (e *Engine) releaseShared(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := e.sharers(r.Kind); err != nil {
		return engine.ReleaseResult{}, err
	}
	f := e.sharedFlights.lookup(r.Name, r.Owner, r.Kind)
	if f != nil {
		f.release()
	}
	var s *straggling
	var straggler func(int, result[engine.ReleaseResult])
	var stop func([]result[engine.ReleaseResult], int) bool
	if len(e.nodes) > 1 {
		s = newStraggling(len(e.nodes))
		straggler = func(i int, _ result[engine.ReleaseResult]) {
			if s.answer(i) {
				e.releasing.finish(r.Name, s)
			}
		}
		stop = func(rs []result[engine.ReleaseResult], _ int) bool { return e.releaseDecided(rs) }
	}
	rs := each(ctx, e, e.timeout(0), afterReleases(e, r.Name, func(ctx context.Context, n node) (engine.ReleaseResult, error) {
		if f != nil {
			f.waitNode(ctx, e.index(n))
		}
		return releaseOnceOf(ctx, n.eng, r, id)
	}), stop, straggler)
	if s != nil {
		e.releasing.start(r.Name, s, func(i int) bool { return rs[i].done })
	}
	if released, _, _ := countReleases(rs); released == 0 {
		// A majority's refusal: the hold is of the other shared kind.
		if err := sharedRefusal(e, rs); err != nil {
			return engine.ReleaseResult{}, err
		}
	}
	return e.releaseOutcome(rs)
}

// releaseDecided reports whether the answers so far decide a release: a
// majority released, a majority says the owner does not hold it, or a
// majority can no longer answer (refusals count as failures: a majority
// of them is sharedRefusal's).
func (e *Engine) releaseDecided(rs []result[engine.ReleaseResult]) bool {
	released, notHeld, failed := countReleases(rs)
	return released >= e.majority || notHeld >= e.majority || failed > len(e.nodes)-e.majority
}

// sharedFlight follows the nodes of one shared grant whose answers were
// still out when Acquire returned, as flight follows a mutex's, by the
// same rules:
//
//   - grant kept: a late grant stays, given the grant's token when it
//     minted a lower one (a one-node phase 2 of the grant's kind; not
//     WithoutFencing); where that fails, it is released there;
//   - grant dropped: a late grant is released there (Undo, as dropShared);
//   - the lease was released meanwhile: a late grant is released there
//     when the release's call to that node stopped waiting for the
//     answer (it may have overtaken the grant); otherwise the release
//     reaches the node after the grant.
//
// Only one-off owners are released by owner (exactHold). A late failure's
// grant, if it landed, expires with its ttl, as dropShared leaves one (the
// background cleaners release mutexes only).
type sharedFlight struct {
	e   *Engine
	req engine.AcquireRequest

	mu       sync.Mutex
	decided  bool
	kept     bool            // the grant was acquired (once decided)
	token    uint64          // the grant's token (when kept)
	early    []nodeResult    // answers that came before the decision
	pending  int             // answers still out, once decided
	answered []chan struct{} // by node: closed by its late answer (nil: no wait)
	gaveUp   []bool          // by node: the release stopped waiting for the answer
	released bool            // the lease was released
}

// late takes node i's answer after Acquire stopped waiting for it.
func (f *sharedFlight) late(i int, x result[engine.Grant]) {
	f.mu.Lock()
	if !f.decided {
		f.early = append(f.early, nodeResult{i, x})
		f.mu.Unlock()
		return
	}
	f.pending--
	last := f.pending == 0
	kept, token, released := f.kept, f.token, f.released
	overtaken := false
	if f.answered != nil && f.answered[i] != nil {
		close(f.answered[i])
		overtaken = f.gaveUp[i]
	}
	f.mu.Unlock()
	f.settle(i, x, kept, token, released, overtaken)
	if last {
		f.e.sharedFlights.forget(f)
	}
}

// decide records the outcome of the grant g, given the answers Acquire
// had (rs), and settles the late answers that came before it (in the
// background). A kept grant with answers still out is registered, so
// that releaseShared finds it.
func (f *sharedFlight) decide(rs []result[engine.Grant], g engine.Grant) {
	fl := &f.e.sharedFlights
	fl.mu.Lock()
	f.mu.Lock()
	f.decided, f.kept, f.token = true, g.Acquired, g.Token
	f.pending = unanswered(rs) - len(f.early)
	early := f.early
	f.early = nil
	if f.kept && f.pending > 0 {
		f.answered = make([]chan struct{}, len(rs))
		f.gaveUp = make([]bool, len(rs))
		for i, x := range rs {
			if !x.done && !answeredEarly(early, i) {
				f.answered[i] = make(chan struct{})
			}
		}
		if fl.m == nil {
			fl.m = make(map[grantKey]*sharedFlight)
		}
		fl.m[grantKey{f.req.Name, f.req.Owner}] = f
	}
	f.mu.Unlock()
	fl.mu.Unlock()
	if len(early) == 0 {
		return
	}
	f.e.bg.Add(1)
	go func() {
		defer f.e.bg.Done()
		for _, a := range early {
			f.settle(a.node, a.x, g.Acquired, g.Token, false, false)
		}
	}()
}

// release marks the lease released.
func (f *sharedFlight) release() {
	f.mu.Lock()
	f.released = true
	f.mu.Unlock()
}

// waitNode waits until node i's grant answered, so that a release sent
// after it cannot overtake the grant there; when ctx ends first, the late
// answer's settlement releases the grant there.
func (f *sharedFlight) waitNode(ctx context.Context, i int) {
	f.mu.Lock()
	var ch chan struct{}
	if f.answered != nil {
		ch = f.answered[i]
	}
	f.mu.Unlock()
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
			f.gaveUp[i] = true
		}
		f.mu.Unlock()
	}
}

// settle acts on node i's late answer x, given the grant's outcome (kept)
// and token; released tells whether the lease was released when the
// answer came, overtaken whether the release's call to node i stopped
// waiting for it.
func (f *sharedFlight) settle(i int, x result[engine.Grant], kept bool, token uint64, released, overtaken bool) {
	r := f.req
	switch {
	case x.err != nil || !x.v.Acquired:
		// Refused there (nothing of ours), or failed: a grant that
		// landed expires with its ttl.
	case !exactHold(r):
		// An explicit owner may hold there already (re-entry): a
		// release could drop that hold instead.
	case released && !overtaken:
		// the release reaches node i after this grant
	case released || !kept:
		f.drop(i, !kept)
	case x.v.Token < token && !f.e.noFencing:
		f.align(i, token)
	}
}

// align records the grant's token on node i, which granted late with a
// lower token of its own (a raise never lowers one: a higher token
// stays, as flight.align leaves it). Where the raise fails otherwise, the
// node's grant is released.
func (f *sharedFlight) align(i int, token uint64) {
	r := f.req
	ctx, cancel := context.WithTimeout(context.Background(), f.e.timeout(r.TTL))
	ok, err := raiseFence(ctx, f.e.nodes[i].eng, engine.RaiseRequest{Name: r.Name, Owner: r.Owner, Token: token, Kind: r.Kind})
	cancel()
	var ae *engine.ArgumentError
	if errors.As(err, &ae) {
		return
	}
	if err != nil || !ok {
		f.drop(i, false)
	}
}

// drop releases the grant's hold on node i (with undo, as dropShared
// takes back a failed grant), within the per-node timeout; a failure
// leaves it to expire with its ttl.
func (f *sharedFlight) drop(i int, undo bool) {
	r := f.req
	ctx, cancel := context.WithTimeout(context.Background(), f.e.timeout(0))
	defer cancel()
	_, _ = f.e.nodes[i].eng.Release(ctx, engine.ReleaseRequest{Name: r.Name, Owner: r.Owner, Kind: r.Kind, Undo: undo})
}

// sharedFlights tracks the kept shared grants whose late answers are
// still out, by lock name and owner.
type sharedFlights struct {
	mu sync.Mutex
	m  map[grantKey]*sharedFlight
}

// lookup returns the flight of owner's grant of kind on name, if answers
// are out.
func (fl *sharedFlights) lookup(name, owner string, kind engine.Kind) *sharedFlight {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if f := fl.m[grantKey{name, owner}]; f != nil && f.req.Kind == kind {
		return f
	}
	return nil
}

// forget drops f once its last answer is in.
func (fl *sharedFlights) forget(f *sharedFlight) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	k := grantKey{f.req.Name, f.req.Owner}
	if fl.m[k] == f {
		delete(fl.m, k)
	}
}

// sharedView is the shared lock the nodes describe (rs, Inspect's): the
// kind and limit are those a majority of the nodes keep; the holders are
// the owners that hold permits on a majority of the nodes, each with the
// weight, holds, token and time left that a majority confirms; the
// high-water is the highest any node reports, the waiters those a
// majority count (countedQueue: the name's queue, whichever kind a node
// describes).
func (e *Engine) sharedView(name string, rs []result[engine.Info]) engine.Info {
	info := engine.Info{Name: name}
	kinds := map[[2]int]int{} // (kind, limit) -> nodes
	type seen struct {
		weights, counts []int
		ttls            []time.Duration
		tokens          map[uint64]int
		metadata        map[string]int
	}
	holders := map[string]*seen{}
	for _, x := range rs {
		if x.err != nil {
			continue
		}
		info.HighWater = max(info.HighWater, x.v.HighWater)
		if !x.v.Kind.Shared() {
			continue // a node that describes the mutex holds no permits
		}
		kinds[[2]int{int(x.v.Kind), x.v.Limit}]++
		for _, h := range x.v.Holders {
			s := holders[h.Owner]
			if s == nil {
				s = &seen{tokens: map[uint64]int{}, metadata: map[string]int{}}
				holders[h.Owner] = s
			}
			s.weights = append(s.weights, h.Weight)
			s.counts = append(s.counts, h.Count)
			s.ttls = append(s.ttls, h.TTL)
			s.tokens[h.Token]++
			s.metadata[h.Metadata]++
		}
	}
	info.Partial = partial(e, rs)
	info.Waiters, _ = e.countedQueue(rs)
	// The kind and limit a majority of the nodes keep: a minority's can be
	// what a refused or rolled-back grant left there (a node that missed
	// the name's mutex grant took the shared one, and was released).
	best := 0
	for k, n := range kinds {
		if n < e.majority {
			continue
		}
		if n > best || n == best && k[1] > info.Limit {
			best, info.Kind, info.Limit = n, engine.Kind(k[0]), k[1]
		}
	}
	for owner, s := range holders {
		if len(s.counts) < e.majority {
			continue
		}
		// What a majority confirms: a release, re-entry or extension may
		// not have reached a minority yet.
		slices.Sort(s.weights)
		slices.Sort(s.counts)
		slices.SortFunc(s.ttls, func(a, b time.Duration) int { return cmp.Compare(untilExpiry(a), untilExpiry(b)) })
		k := len(s.counts) - e.majority
		h := engine.Holder{Owner: owner, Weight: s.weights[k], Count: s.counts[k], TTL: s.ttls[k],
			Token: e.token(s.tokens), Metadata: commonMetadata(s.metadata)}
		info.Holders = append(info.Holders, h)
		info.Token = max(info.Token, h.Token)
	}
	slices.SortFunc(info.Holders, func(a, b engine.Holder) int {
		return cmp.Or(cmp.Compare(a.Token, b.Token), cmp.Compare(a.Owner, b.Owner))
	})
	info.Held = len(info.Holders) > 0
	return info
}

// SetLimit implements engine.Sharer: a limit of 1 only (see
// ErrSemaphoreLimit), set on every node; it needs a majority. The previous
// limit is the one most nodes had.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	if err := checkLimit(engine.Semaphore, limit); err != nil {
		return 0, err
	}
	if err := e.sharers(engine.Semaphore); err != nil {
		return 0, err
	}
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (int, error) {
		return n.eng.(engine.Sharer).SetLimit(ctx, name, limit)
	}, nil, nil)
	prevs := map[int]int{}
	ok, refused := 0, 0
	var refusal *engine.ArgumentError
	for _, x := range rs {
		var ae *engine.ArgumentError
		switch {
		case x.err == nil:
			ok++
			prevs[x.v]++
		case errors.As(x.err, &ae):
			refused++
			if refusal == nil {
				refusal = ae
			}
		}
	}
	// A refusal (the name held as a mutex, or kept as an RW lock) is the
	// request's fault only when a majority makes it, as sharedRefusal
	// judges an acquire's: a minority's is a node behind the others (a
	// reader's grant rolled back where it alone answered leaves its
	// kind), outvoted. Returned when any node refused, it told the caller
	// that nothing changed while a majority had stored the limit, and the
	// semaphore was then granted on the name it had called an RW lock's.
	if refused >= e.majority {
		return 0, refusal
	}
	if ok < e.majority {
		return 0, &NoQuorumError{Op: "set-limit", OK: ok, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
	}
	prev, best := 0, 0
	for p, n := range prevs {
		if n > best || n == best && p > prev {
			prev, best = p, n
		}
	}
	return prev, nil
}

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind) to acquireMutex or acquireShared.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return engine.AcquireByKind(ctx, r, e.acquireMutex, e.acquireShared)
}

// Release implements engine.Engine: ReleaseOnce with an id of its own.
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.ReleaseOnce(ctx, r, newReleaseID())
}

// ReleaseOnce implements engine.OnceReleaser: every kind of lock,
// dispatched once on r.Kind (engine.ReleaseOnceByKind) to releaseMutex or
// releaseShared, with id on every node (each node's ReleaseOnce, where it
// has one) and in every background retry, so a copy (a Client resending a
// release whose answer was lost) drops no second hold on any node.
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if id == "" {
		id = newReleaseID() // "" would be no id on the nodes
	}
	r.Token = 0 // the nodes keep tokens of their own (engine.ReleaseRequest.Token)
	return engine.ReleaseOnceByKind(ctx, r, id, e.releaseMutex, e.releaseShared)
}
