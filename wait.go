package distlock

import (
	"context"
	"sync/atomic"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/waiting"
)

// wait waits for the name after a first attempt was refused (or skipped),
// in the wait loop it shares with the server (internal/waiting).
//
// On an engine with a waiter queue (q not nil) the first refused attempt
// enters the queue; the waiter then sleeps until a wake-up addressed to it,
// its heartbeat's word that it heads the queue of a free lock, or (as the
// head) the holder's expiry. Nobody but the head is woken by a release. A
// waiter that gives up leaves the queue before the call returns.
//
// On an engine without one, the waiter subscribes to the lock's releases,
// and goroutines of one Client take turns (turn.go), so that a release
// wakes one contender per Client. Across Clients there is no order: the
// first to ask after a release wins.
//
// Either way, a backend that cannot work ends the wait before ctx does
// (a.failures): at once for an error no retry can mend, else once the
// attempts have kept failing for the Client's backend failure budget.
func (a *attempt) wait(q engine.Queuer) (*Lease, error) {
	c := a.c
	var lease *Lease
	var fatal error
	loop := waiting.Loop{Engine: c.eng, Name: a.name, Kind: a.req.Kind, Detached: c.releaseContext, Failures: a.failures}
	if q != nil {
		w := &queueWaiter{a: a, id: c.waiterID(a.o.owner), kick: make(chan struct{}, 1)}
		defer w.close()
		a.req.Waiter, a.req.WaiterTTL = w.id, WaiterTTL
		if a.o.fair {
			a.req.Order = engine.OrderFair
		}
		a.leaving = new(atomic.Bool)
		loop.Queue, loop.Waiter, loop.Queued, loop.Kick, loop.Failing = leavingQueue{q, a.leaving}, w.id, w.enter, w.kick, w.failingSince
	} else {
		loop.Turn = a.takeTurn
	}
	loop.Try = func(actx context.Context) waiting.Answer {
		if q != nil {
			// No barging inside a Client: while goroutines of this Client
			// wait in the queue for the name, a new waiter does not take
			// the free lock ahead of them. (Not an explicit owner, which
			// may be re-entering.)
			if a.req.Order == engine.OrderDefault && a.o.owner == "" && c.queuedOn(a.name) {
				a.req.Order = engine.OrderBehind
			}
		}
		lease, fatal = a.try(actx)
		cause := a.backendCause()
		return waiting.Answer{Grant: a.g, Failed: cause != nil, Err: cause, Done: lease != nil || fatal != nil}
	}
	if err := loop.Run(a.ctx); err != nil {
		if ferr := a.failed(err); ferr != nil {
			return nil, ferr // the backend cannot work: not ctx's doing
		}
		return nil, a.giveUp(ctxErr(a.ctx))
	}
	return lease, fatal
}

// takeTurn waits for this waiter's turn among the Client's waiters on the
// name (turn.go), and counts it as waiting while it lasts.
func (a *attempt) takeTurn(ctx context.Context) (func(), error) {
	c := a.c
	c.obs.Waiting(a.name, 1)
	release, err := c.takeTurn(ctx, a.name)
	if err != nil {
		c.obs.Waiting(a.name, -1)
		return nil, err
	}
	return func() {
		release()
		c.obs.Waiting(a.name, -1)
	}, nil
}

// leavingQueue is the wait's queue: its Leave marks the wait as leaving
// before it is sent (attempt.leaving), so that an attempt abandoned in
// flight whose answer comes later leaves the entry it made.
type leavingQueue struct {
	engine.Queuer
	leaving *atomic.Bool
}

// Leave implements engine.Queuer.
func (q leavingQueue) Leave(ctx context.Context, r engine.LeaveRequest) error {
	q.leaving.Store(true)
	return q.Queuer.Leave(ctx, r)
}
