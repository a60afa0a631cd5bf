package quorum

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := checkLimit(r.Kind, r.Limit); err != nil {
		return engine.Grant{}, err
	}
	if err := e.sharers(r.Kind); err != nil {
		return engine.Grant{}, err
	}
	e.propose(&r)
	start := time.Now()
	rs := each(ctx, e, e.timeout(r.TTL), func(ctx context.Context, n node) (engine.Grant, error) {
		return n.eng.Acquire(ctx, r)
	}, nil, nil)
	return e.decide(ctx, r, rs, start)
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

// releaseShared is Release for a shared kind: on every node concurrently; the
// hold is released when a majority released it (or any node, on mixed
// answers), as Release counts.
func (e *Engine) releaseShared(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := e.sharers(r.Kind); err != nil {
		return engine.ReleaseResult{}, err
	}
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (engine.ReleaseResult, error) {
		return n.eng.Release(ctx, r)
	}, nil, nil)
	released, notHeld, failed := countReleases(rs)
	var left []int
	notOwner := 0
	for _, x := range rs {
		switch {
		case !x.done || x.err != nil:
		case x.v.Status == engine.Released:
			left = append(left, x.v.Remaining)
		case x.v.Status == engine.NotOwner:
			notOwner++
		}
	}
	slices.Sort(left)
	remaining := 0
	if len(left) >= e.majority {
		remaining = left[len(left)-e.majority]
	} else if len(left) > 0 {
		remaining = left[0]
	}
	if released == 0 {
		// A majority's refusal: the hold is of the other shared kind.
		if err := sharedRefusal(e, rs); err != nil {
			return engine.ReleaseResult{}, err
		}
	}
	switch {
	case released > 0:
		return engine.ReleaseResult{Status: engine.Released, Remaining: remaining}, nil
	case notOwner >= e.majority:
		return engine.ReleaseResult{Status: engine.NotOwner}, nil // taken over, as releaseOutcome says
	case notHeld >= e.majority:
		return engine.ReleaseResult{Status: engine.NotHeld}, nil
	case failed > 0:
		return engine.ReleaseResult{}, &NoQuorumError{Op: "release", OK: len(e.nodes) - failed, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
	}
	return engine.ReleaseResult{Status: engine.NotHeld}, nil
}

// sharedView is the shared lock the nodes describe (rs, Inspect's): the
// kind and limit are those a majority of the nodes keep; the holders are
// the owners that hold permits on a majority of the nodes, each with the
// weight, holds, token and time left that a majority confirms; the
// high-water is the highest any node reports, the waiters the most any
// node describing the shared lock reports.
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
		info.Waiters = max(info.Waiters, x.v.Waiters)
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

// Release implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.ReleaseByKind) to releaseMutex or releaseShared.
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	r.Token = 0 // the nodes keep tokens of their own (engine.ReleaseRequest.Token)
	return engine.ReleaseByKind(ctx, r, e.releaseMutex, e.releaseShared)
}
