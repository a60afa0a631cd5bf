package quorum

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock/engine"
)

var _ engine.Queuer = (*Engine)(nil)

// errFairQuorum: strict FIFO needs one queue order, and N independent
// queues can disagree on it (two waiters that enter at once may be queued
// in different orders on different nodes); reserving the lock for each
// node's head would then split the vote. See docs/REDLOCK.md.
var errFairQuorum = fmt.Errorf("quorum: fair waiting needs one queue order, which independent nodes cannot promise: %w", errors.ErrUnsupported)

// The quorum's waiter queue is the nodes' queues: a waiting acquire enters
// the queue of every node that has one (with OrderNoReserve), each node wakes
// its own head on a release, heartbeats travel in the Extend batches to
// every node, and a waiter leaves every node's queue. Wake-ups are for the
// heads only, but the heads of different nodes may differ: a release wakes
// at most one waiter per node, never the herd. WithFair is refused.

// SubscribeWaiter implements engine.Queuer: a subscription on every node
// (addressed to the waiter where the node has a queue), woken by any.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return e.subscribe(ctx, func(ctx context.Context, n node) (engine.Subscription, error) {
		if q, ok := n.eng.(engine.Queuer); ok {
			return q.SubscribeWaiter(ctx, name, waiter)
		}
		return n.eng.Subscribe(ctx, name)
	})
}

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind) to leaveAll, a shared kind after the nodes were
// checked to keep shared locks (leaveShared). It fails only when no node
// could be told (the others drop the waiter at its heartbeat deadline).
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leaveAll, e.leaveShared)
}

// leaveShared is Leave's path for a shared lock's waiter: refused when a
// node keeps no shared locks, else leaveAll.
func (e *Engine) leaveShared(ctx context.Context, r engine.LeaveRequest) error {
	if err := e.sharers(r.Kind); err != nil {
		return err
	}
	return e.leaveAll(ctx, r)
}

// leaveAll takes the waiter of r out of the queue of every node with one,
// concurrently; an error only when no node could be told.
func (e *Engine) leaveAll(ctx context.Context, r engine.LeaveRequest) error {
	e.leftName(r.Name, r.Waiter) // before any node hears of it (leftWaiters)
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (bool, error) {
		if q, ok := n.eng.(engine.Queuer); ok {
			return true, q.Leave(ctx, r)
		}
		return false, nil
	}, nil, nil)
	if errs := nodeErrs(rs); len(errs) == len(e.nodes) {
		return &NoQuorumError{Op: "leave", Majority: e.majority, Nodes: len(e.nodes), Errs: errs}
	}
	return nil
}

// leaveNode takes waiter r's entry out of node i's queue, in the
// background: r was granted on a majority, and node i refused it (the
// holder's release had not reached it yet) or failed. Left there, the
// entry would head that node's queue as a dead waiter: the node's
// releases would wake it instead of the live waiters behind it, until its
// heartbeat deadline.
func (e *Engine) leaveNode(i int, r engine.AcquireRequest) {
	q, ok := e.nodes[i].eng.(engine.Queuer)
	if !ok || r.Waiter == "" {
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), e.timeout(0))
		defer cancel()
		_ = q.Leave(ctx, engine.LeaveRequest{Name: r.Name, Waiter: r.Waiter, Kind: r.Kind}) // else the entry lapses at its deadline
	}()
}

// anyWake reports whether a node told the waiter of request i to try.
func anyWake(rs []result[[]engine.ExtendResult], i int) bool {
	for _, x := range rs {
		if x.done && x.err == nil && i < len(x.v) && x.v[i].Wake {
			return true
		}
	}
	return false
}

// Capabilities implements engine.Describer: not fair (see errFairQuorum);
// the ttl limits of the strictest node (the largest minimum and the
// coarsest granularity).
func (e *Engine) Capabilities() engine.Capabilities {
	var c engine.Capabilities
	for _, n := range e.nodes {
		nc := engine.CapabilitiesOf(n.eng)
		c.MinTTL, c.TTLGranularity = max(c.MinTTL, nc.MinTTL), max(c.TTLGranularity, nc.TTLGranularity)
	}
	return c
}
