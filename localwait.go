package distlock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/distlock/distlock/engine"
)

// Waiting tunables: the fallback polling interval when no wake-up can be
// received, and how long a subscription may take to be confirmed before the
// waiter falls back to polling.
const (
	pollFallback     = 100 * time.Millisecond
	subscribeTimeout = time.Second
)

// waitLocal waits on an engine without a waiter queue (engine.Queuer): the
// waiter subscribes to the lock's releases, and goroutines of one Client
// take turns (turn.go), so that a release wakes one contender per Client.
// Across Clients there is no order: the first to ask after a release wins.
func (a *attempt) waitLocal() (*Lease, error) {
	w := localWaiter{a: a}
	defer w.close()
	// No barging inside a Client: when goroutines of this Client already
	// wait for the name, a new waiter queues behind them before its first
	// attempt. (Not for an explicit owner, which may be re-entering a lock
	// its own waiters wait for.)
	if a.o.owner == "" && a.c.waitersOn(a.name) {
		a.contended = true
		if err := w.queue(); err != nil {
			return nil, err
		}
	}
	for {
		l, err := a.try()
		if l != nil || err != nil {
			return l, err
		}
		if w.leave == nil {
			if err := w.queue(); err != nil {
				return nil, err
			}
			continue // the holder may have left while we queued
		}
		if err := w.sleep(); err != nil {
			return nil, err
		}
	}
}

// localWaiter is the waiting state of waitLocal.
type localWaiter struct {
	a         *attempt
	sub       engine.Subscription
	subFailed bool
	leave     func() // gives up the Client's turn on the name, once taken
	timer     *time.Timer
}

// sleep waits for the next attempt: until a release is signalled, the
// holder's lease would have run out, or ctx ends.
func (w *localWaiter) sleep() error {
	a := w.a
	if w.sub == nil && !w.subFailed {
		sub, err := subscribe(a, func(ctx context.Context) (engine.Subscription, error) {
			return a.c.eng.Subscribe(ctx, a.name)
		})
		if err != nil {
			return err
		}
		if sub != nil {
			w.sub = sub
			return nil // the lock may have been released meanwhile: retry at once
		}
		w.subFailed = true // poll from now on
	}
	d := a.nextTry()
	if w.sub == nil && d > pollFallback {
		d = jitter(pollFallback)
	}
	var wake <-chan struct{}
	if w.sub != nil && a.g.Retry <= 0 {
		// (After a split vote, every contender is woken alike: the random
		// pause alone spreads their next attempts.)
		wake = w.sub.C()
	}
	return sleepFor(a, &w.timer, d, wake, nil)
}

// subscribe takes a subscription with subscribeTimeout. It returns nil and
// no error when the engine could not subscribe (the caller then polls), and
// an error when the call must end.
func subscribe(a *attempt, fn func(ctx context.Context) (engine.Subscription, error)) (engine.Subscription, error) {
	sctx, cancel := context.WithTimeout(a.ctx, subscribeTimeout)
	sub, err := fn(sctx)
	cancel()
	if err != nil {
		if err := ctxErr(a.ctx); err != nil {
			return nil, a.giveUp(err)
		}
		return nil, nil
	}
	return sub, nil
}

// sleepFor waits d (no limit when negative), or until a wake-up on either
// channel (either may be nil), or until the call's context ends. *t is
// reused across calls.
func sleepFor(a *attempt, t **time.Timer, d time.Duration, wake, kick <-chan struct{}) error {
	var fire <-chan time.Time
	if d >= 0 {
		if *t == nil {
			*t = time.NewTimer(d)
		} else {
			(*t).Reset(d)
		}
		fire = (*t).C
	}
	stop := func() {
		if *t != nil {
			(*t).Stop()
		}
	}
	select {
	case <-wake:
		stop()
		return nil
	case <-kick:
		stop()
		return nil
	case <-fire:
		return nil
	case <-a.ctx.Done():
		stop()
		return a.giveUp(ctxErr(a.ctx))
	}
}

// queue waits for this waiter's turn among the Client's waiters on the
// name (see turn.go).
func (w *localWaiter) queue() error {
	a := w.a
	a.c.obs.Waiting(a.name, 1)
	release, err := a.c.takeTurn(a.ctx, a.name)
	if err != nil {
		a.c.obs.Waiting(a.name, -1)
		return a.giveUp(ctxErr(a.ctx))
	}
	w.leave = func() {
		release()
		a.c.obs.Waiting(a.name, -1)
	}
	return nil
}

func (w *localWaiter) close() {
	if w.leave != nil {
		w.leave()
	}
	if w.sub != nil {
		w.sub.Close()
	}
	if w.timer != nil {
		w.timer.Stop()
	}
}

// jitter returns a duration uniformly in [d/2, 3d/2).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}
