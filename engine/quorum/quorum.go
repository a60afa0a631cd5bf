// Package quorum composes N independent lock engines into one (Redlock): a
// grant, an extension or a fencing step counts only when a majority of the
// nodes (N/2+1) confirms it within the lease's validity. The composed engine
// is an engine.Engine, so distlock.Client and Lease use it unchanged.
//
// Every node is contacted concurrently with a per-node timeout much smaller
// than the ttl, and validity is ttl - elapsed - drift on the monotonic clock
// from before the first send. On any failure or ambiguous answer the grant is
// released on every node by owner token.
//
// Fencing tokens use two phases: phase 1 grants return each node's token,
// the grant's token is their maximum; phase 2 raises the high-water to it on
// a majority, conditional on still holding the lock there. Any two majorities
// intersect, so a later grant sees a higher high-water. See docs/FENCING.md
// and docs/REDLOCK.md.
package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/expiring"
)

// DefaultMaxNodeTimeout caps the default per-node timeout.
const DefaultMaxNodeTimeout = 50 * time.Millisecond

// MinNodeTimeout is the floor of the default per-node timeout: below it a
// busy but healthy node (a connection being dialled, a loaded machine) would
// count as failed.
const MinNodeTimeout = 10 * time.Millisecond

// Engine is a quorum of independent engines.
type Engine struct {
	nodes         []node
	majority      int
	nodeTimeout   time.Duration // 0: min(ttl/100, 50ms) per call
	noFencing     bool
	failFast      bool
	bg            sync.WaitGroup // background clean-ups
	done          chan struct{}  // closed by Close: clean-ups stop
	cleaners      []*cleaner     // one per node
	flights       flights        // kept grants with answers still out
	sharedFlights sharedFlights  // kept shared grants with answers still out
	releasing     releasing      // releases with answers still out
	left          *leftWaiters   // waiters that left, for late answers and undos
	closeOnce     sync.Once

	nodeErr func(node string, err error) // WithNodeErrors

	// skipValidity disables the validity check: for negative-control
	// tests only (see WithoutValidityCheckForTesting).
	skipValidity bool
}

type node struct {
	eng  engine.Engine
	name string
}

var (
	_ engine.Engine         = (*Engine)(nil)
	_ engine.ForceReleaser  = (*Engine)(nil)
	_ engine.HolderReleaser = (*Engine)(nil)
	_ engine.FenceRaiser    = (*Engine)(nil)
	_ engine.OnceReleaser   = (*Engine)(nil)
)

// Option configures a quorum Engine.
type Option func(*Engine)

// WithNodeTimeout sets the per-node timeout of every call (default
// min(ttl/100, 50ms), at least 10ms, for acquire and extend; 50ms for the
// rest).
func WithNodeTimeout(d time.Duration) Option { return func(e *Engine) { e.nodeTimeout = d } }

// WithoutFencing skips phase 2 of a grant: one round trip instead of two.
// The token is then the maximum of the tokens the majority minted, which is
// still unique to the grant but no longer ordered against every earlier
// grant: a later grant on a different majority may get a lower token. Use it
// only when no resource checks tokens.
func WithoutFencing() Option { return func(e *Engine) { e.noFencing = true } }

// WithFailFast makes an explicit owner's Acquire (distlock.WithOwner) return
// as soon as the outcome is decided, as every one-off owner's does anyway: a
// majority granted, or a majority can no longer grant. An explicit owner's
// late answers cannot be released by owner (it may hold the lock there
// already, re-entered), so its late grants are left to expire with their
// ttl, and without this option its Acquire waits for every node (or its
// per-node timeout).
func WithFailFast() Option { return func(e *Engine) { e.failFast = true } }

// WithNodeErrors calls fn with every failed call to a node (for per-node
// error metrics). fn must be fast and safe for concurrent use.
func WithNodeErrors(fn func(node string, err error)) Option {
	return func(e *Engine) { e.nodeErr = fn }
}

// WithoutValidityCheckForTesting turns off the check that a grant still has
// validity left. It exists only so tests can show that the check matters
// (the grant is then accepted even when it arrives after its keys expired);
// never use it elsewhere. The Client's own deadline check must be off too:
// see distlock's test helpers.
func WithoutValidityCheckForTesting() Option { return func(e *Engine) { e.skipValidity = true } }

// New composes engines into a quorum; the quorum owns them (Close closes
// them). It warns (log/slog) on an even number
// of nodes, which tolerates no more failures than one node fewer.
func New(engines []engine.Engine, opts ...Option) (*Engine, error) {
	if len(engines) == 0 {
		return nil, errors.New("distlock/engine/quorum: no engines")
	}
	e := &Engine{majority: len(engines)/2 + 1, done: make(chan struct{}), left: expiring.New[grantKey, struct{}](maxPending)}
	for i, eng := range engines {
		if eng == nil {
			return nil, fmt.Errorf("distlock/engine/quorum: engine %d is nil", i)
		}
		name := fmt.Sprintf("node %d", i)
		if s, ok := eng.(fmt.Stringer); ok {
			name = s.String()
		}
		e.nodes = append(e.nodes, node{eng: eng, name: name})
		e.cleaners = append(e.cleaners, &cleaner{e: e, eng: eng, pending: map[grantKey]*pendingRelease{}})
	}
	for _, o := range opts {
		o(e)
	}
	if e.nodeTimeout < 0 {
		return nil, fmt.Errorf("distlock/engine/quorum: negative node timeout %v", e.nodeTimeout)
	}
	if !e.noFencing {
		// A wrapper that embeds engine.Engine hides the optional
		// interface: say so now, not with every grant failing phase 2.
		for i, n := range e.nodes {
			if _, ok := n.eng.(engine.FenceRaiser); !ok {
				return nil, fmt.Errorf("distlock/engine/quorum: engine %d (%s, %T) cannot raise fences (engine.FenceRaiser), which phase-2 fencing needs: implement it (forward it, for a wrapper) or use WithoutFencing", i, n.name, n.eng)
			}
		}
	}
	if len(engines)%2 == 0 {
		slog.Warn("distlock: a quorum of an even number of nodes tolerates no more failures than one node fewer",
			"nodes", len(engines))
	}
	return e, nil
}

// Nodes returns the number of nodes; Majority the number a decision needs.
func (e *Engine) Nodes() int    { return len(e.nodes) }
func (e *Engine) Majority() int { return e.majority }

// NodeEngines returns the node engines, in the order given to New: for
// checks that look at each node (distlock's CLI pings them all before its
// first call). A call made through them bypasses the quorum.
func (e *Engine) NodeEngines() []engine.Engine {
	out := make([]engine.Engine, len(e.nodes))
	for i, n := range e.nodes {
		out[i] = n.eng
	}
	return out
}

// String names the quorum.
func (e *Engine) String() string { return fmt.Sprintf("quorum of %d", len(e.nodes)) }

// timeout is the per-node timeout for a call about a lease of ttl.
func (e *Engine) timeout(ttl time.Duration) time.Duration {
	if e.nodeTimeout > 0 {
		return e.nodeTimeout
	}
	if ttl <= 0 {
		return DefaultMaxNodeTimeout
	}
	return max(min(ttl/100, DefaultMaxNodeTimeout), MinNodeTimeout)
}

// drift is the clock-drift allowance (engine.Drift).
func drift(ttl time.Duration) time.Duration { return engine.Drift(ttl) }

// NodeError is one node's failure.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// ErrNoQuorum: fewer than a majority of the nodes answered.
var ErrNoQuorum = errors.New("no quorum")

// NoQuorumError reports that a majority could not be reached because nodes
// failed. It wraps every node's error.
type NoQuorumError struct {
	Op       string
	OK       int // nodes that confirmed (for an acquire: that answered)
	Majority int
	Nodes    int
	// Held is, for an acquire, how many of the nodes that answered said
	// another owner holds the lock there: detail only, since a minority's
	// word cannot decide that the lock is held.
	Held int
	Errs []error // *NodeError per failed node
}

func (e *NoQuorumError) Error() string {
	held := ""
	if e.Held > 0 {
		held = fmt.Sprintf(" (%d reachable node(s) hold it for another owner)", e.Held)
	}
	return fmt.Sprintf("%s: no quorum: %d of %d nodes confirmed, %d needed%s: %v",
		e.Op, e.OK, e.Nodes, e.Majority, held, errors.Join(e.Errs...))
}

// Unwrap returns ErrNoQuorum and the node errors.
func (e *NoQuorumError) Unwrap() []error { return append([]error{ErrNoQuorum}, e.Errs...) }

// ErrValidityUsedUp: the grant reached a majority, but too late.
var ErrValidityUsedUp = errors.New("validity used up by slow nodes")

// each runs fn on every node concurrently, each with its own per-node
// timeout, and returns when all answered or, with stop, as soon as stop says
// the outcome is decided. The answers that come after that are handed to
// late (if not nil) from a background goroutine.
func each[T any](ctx context.Context, e *Engine, timeout time.Duration,
	fn func(ctx context.Context, n node) (T, error),
	stop func(results []result[T], answered int) bool,
	late func(i int, r result[T])) []result[T] {
	if len(e.nodes) == 1 {
		// One node: no goroutine, nothing left to answer late.
		n := e.nodes[0]
		nctx, cancel := context.WithTimeout(ctx, timeout)
		v, err := fn(nctx, n)
		cancel()
		if err != nil {
			if e.nodeErr != nil {
				e.nodeErr(n.name, err)
			}
			err = &NodeError{Node: n.name, Err: err}
		}
		return []result[T]{{v: v, err: err, done: true}}
	}
	type indexed struct {
		i int
		r result[T]
	}
	ch := make(chan indexed, len(e.nodes))
	// Until each returns, the caller's cancellation ends the node calls.
	// The calls still out after that (a decided outcome's stragglers) run
	// on, bounded by the per-node timeout: a caller that cancels its
	// context once it has its answer must not cut short the late grants
	// and releases that the quorum settles in the background.
	phase, cancelPhase := context.WithCancelCause(context.WithoutCancel(ctx))
	end := cancelPhase // called by the last node call to finish
	unhook := context.AfterFunc(ctx, func() { cancelPhase(context.Cause(ctx)) })
	defer unhook()
	if ctx.Err() != nil {
		cancelPhase(context.Cause(ctx)) // at once, not when AfterFunc's goroutine runs
	}
	var running atomic.Int32
	running.Store(int32(len(e.nodes)))
	for i, n := range e.nodes {
		go func() {
			nctx, cancel := context.WithTimeout(phase, timeout)
			v, err := fn(nctx, n)
			cancel()
			if err != nil && phase.Err() != nil && ctx.Err() != nil {
				err = ctx.Err() // the caller's own reason (deadline or cancel)
			}
			if running.Add(-1) == 0 {
				end(nil)
			}
			if err != nil {
				if e.nodeErr != nil {
					e.nodeErr(n.name, err)
				}
				err = &NodeError{Node: n.name, Err: err}
			}
			ch <- indexed{i, result[T]{v: v, err: err, done: true}}
		}()
	}
	out := make([]result[T], len(e.nodes))
	answered := 0
	for answered < len(e.nodes) {
		r := <-ch
		answered++
		out[r.i] = r.r
		if stop != nil && answered < len(e.nodes) && stop(out, answered) {
			break
		}
	}
	if left := len(e.nodes) - answered; left > 0 && late != nil {
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			for range left {
				r := <-ch
				late(r.i, r.r)
			}
		}()
	}
	return out
}

// result is one node's answer; done is false for a node not waited for.
type result[T any] struct {
	v    T
	err  error
	done bool
}

func nodeErrs[T any](rs []result[T]) []error {
	var errs []error
	for _, r := range rs {
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return errs
}
