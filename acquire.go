package distlock

import (
	"context"
	"errors"
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

// errValidityUsedUp: the grant's reply came back after its validity ended.
var errValidityUsedUp = errors.New("grant arrived after its validity was used up")

// Acquire waits until the lock name is granted or ctx ends, and returns the
// lease. The wait budget is ctx alone: there is no hidden retry count.
//
// Waiting is driven by notification: the waiter subscribes to the lock's
// releases, and sleeps at most until the holder's lease would expire, so a
// holder that dies without releasing is noticed too. When ctx ends, the
// error is a *WaitError that matches ctx's error and the last attempt's
// (ErrLocked or ErrBackend).
func (c *Client) Acquire(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	return c.observed(ctx, name, opts, true)
}

// TryAcquire makes one attempt. When another owner holds the lock it returns
// a *LockedError (matching ErrLocked) that says how long the holder's lease
// has left.
func (c *Client) TryAcquire(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	return c.observed(ctx, name, opts, false)
}

// observed runs acquire and reports it to the Observer.
func (c *Client) observed(ctx context.Context, name string, opts []Option, wait bool) (*Lease, error) {
	start := time.Now()
	l, contended, err := c.acquire(ctx, name, opts, wait)
	switch {
	case err == nil:
		c.obs.Acquired(name, time.Since(start), contended)
	case !errors.Is(err, ErrInvalidArgument):
		c.obs.AcquireFailed(name, time.Since(start), err)
	}
	return l, err
}

func (c *Client) acquire(ctx context.Context, name string, opts []Option, wait bool) (_ *Lease, contended bool, _ error) {
	ctx, end, err := c.begin(ctx, name)
	if err != nil {
		return nil, false, err
	}
	defer end()
	o := buildOptions(opts)
	if err := o.validate(); err != nil {
		return nil, false, err
	}
	// A waiting Acquire asks the engine for a wake-up at the release.
	req := engine.AcquireRequest{Name: name, Owner: o.owner, TTL: o.ttl, Metadata: o.metadata, Waiting: wait}
	if o.owner != "" {
		req.Attempt = c.owners.next()
	}

	w := waiter{c: c, ctx: ctx, name: name, start: time.Now()}
	defer w.close()
	// No barging inside a Client: when goroutines of this Client already
	// wait for the name, a new waiter queues behind them before its first
	// attempt. (Not for an explicit owner, which may be re-entering a lock
	// its own waiters wait for.)
	if wait && o.owner == "" && c.waitersOn(name) {
		w.contended = true
		if err := w.queue(); err != nil {
			return nil, true, err
		}
	}
	for {
		if err := ctxErr(ctx); err != nil {
			return nil, w.contended, w.giveUp(err)
		}
		if o.owner == "" {
			// A fresh random owner per attempt: a failed attempt's clean-up
			// (by owner token) can never touch a later attempt's grant.
			req.Owner = c.owners.next()
			req.Attempt = req.Owner
		}
		sent := time.Now()
		g, err := c.eng.Acquire(ctx, req)
		if err == nil && g.Acquired {
			l, err := c.grant(ctx, name, req.Owner, o, g.Token, sent, true)
			if err == nil {
				return l, w.contended, nil
			}
			if errors.Is(err, ErrClosed) {
				// Close began: the hold was dropped; no further attempt.
				return nil, w.contended, w.giveUp(ErrClosed)
			}
			w.last = err
		} else if err != nil {
			// The attempt may have been granted all the same (a lost
			// reply); with a random owner, releasing by it is always safe.
			if o.owner == "" {
				c.cleanup(name, req.Owner)
			}
			if ctx.Err() != nil {
				// The context ended the attempt: the previous attempt's
				// outcome (say, locked) is the better explanation, if any.
				if w.last == nil {
					w.last = &BackendError{Op: "acquire", Name: name, Node: c.node, Err: err}
				}
				return nil, w.contended, w.giveUp(ctxErr(ctx))
			}
			w.last = &BackendError{Op: "acquire", Name: name, Node: c.node, Err: err}
		} else {
			w.last = &LockedError{Name: name, TTL: g.HolderTTL}
			w.contended = true
		}
		if !wait {
			return nil, w.contended, w.last
		}
		if w.leave == nil {
			if err := w.queue(); err != nil {
				return nil, w.contended, err
			}
			continue // the holder may have left while we queued
		}
		if g.Retry > 0 {
			if err := w.pause(g.Retry); err != nil {
				return nil, w.contended, err
			}
			continue
		}
		if err := w.sleep(g.HolderTTL); err != nil {
			return nil, w.contended, err
		}
	}
}

// grant turns a confirmed grant (or, for Attach, extension) sent at sent into
// a Lease. When the validity was used up before the reply arrived, or the
// client was closed meanwhile, it fails, and drops the hold that acquire
// added (own is true).
func (c *Client) grant(ctx context.Context, name, owner string, o options, token uint64, sent time.Time, own bool) (*Lease, error) {
	fail := func(err error) (*Lease, error) {
		if own {
			c.cleanup(name, owner)
		}
		return nil, err
	}
	if !c.skipValidity && !time.Now().Before(sent.Add(o.ttl-drift(o.ttl))) {
		return fail(&BackendError{Op: "acquire", Name: name, Node: c.node, Err: errValidityUsedUp})
	}
	l := newLease(c, ctx, name, owner, token, o, sent)
	if !c.track(l) {
		return fail(ErrClosed)
	}
	l.start()
	return l, nil
}

// waiter is the state of one waiting Acquire.
type waiter struct {
	c         *Client
	ctx       context.Context
	name      string
	start     time.Time
	last      error
	sub       engine.Subscription
	subFailed bool
	leave     func() // gives up the Client's turn on the name, once taken
	contended bool   // an attempt found the lock held by another owner
	timer     *time.Timer
}

// sleep waits for the next attempt: until a release is signalled, the
// holder's lease would have run out, or ctx ends.
func (w *waiter) sleep(holderTTL time.Duration) error {
	if w.sub == nil && !w.subFailed {
		sctx, cancel := context.WithTimeout(w.ctx, subscribeTimeout)
		sub, err := w.c.eng.Subscribe(sctx, w.name)
		cancel()
		if err != nil {
			if err := ctxErr(w.ctx); err != nil {
				return w.giveUp(err)
			}
			w.subFailed = true // poll from now on
		} else {
			w.sub = sub
			return nil // the lock may have been released meanwhile: retry at once
		}
	}
	d := holderTTL
	switch {
	case errors.Is(w.last, ErrBackend):
		d = jitter(pollFallback)
	case d < 0: // no expiry on the lock: only a release ends it
		d = jitter(10 * pollFallback)
	case d < time.Millisecond:
		d = time.Millisecond
	}
	if w.sub == nil && d > pollFallback {
		d = jitter(pollFallback)
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	var wake <-chan struct{}
	if w.sub != nil {
		wake = w.sub.C()
	}
	select {
	case <-wake:
		w.timer.Stop()
		return nil
	case <-w.timer.C:
		return nil
	case <-w.ctx.Done():
		w.timer.Stop()
		return w.giveUp(ctxErr(w.ctx))
	}
}

// pause waits d (or until ctx ends), ignoring wake-ups.
func (w *waiter) pause(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-w.ctx.Done():
		return w.giveUp(ctxErr(w.ctx))
	}
}

// giveUp is the error of a wait that ended for why: the caller's context
// error, or ErrClosed when the Client was closed.
func (w *waiter) giveUp(why error) error {
	return &WaitError{Name: w.name, Waited: time.Since(w.start), Ctx: why, Last: w.last}
}

// queue waits for this waiter's turn among the Client's waiters on the
// name (see turn.go).
func (w *waiter) queue() error {
	w.c.obs.Waiting(w.name, 1)
	release, err := w.c.takeTurn(w.ctx, w.name)
	if err != nil {
		w.c.obs.Waiting(w.name, -1)
		return w.giveUp(ctxErr(w.ctx))
	}
	w.leave = func() {
		release()
		w.c.obs.Waiting(w.name, -1)
	}
	return nil
}

func (w *waiter) close() {
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
