package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Waiting tunables, as in package distlock: the polling interval when no
// wake-up can be received or the engine failed, and how long a
// subscription may take.
const (
	pollFallback     = 100 * time.Millisecond
	subscribeTimeout = time.Second
)

// acquireOutcome is what a (possibly waiting) acquire came to.
type acquireOutcome struct {
	grant     engine.Grant // the last answer
	waited    time.Duration
	contended bool      // an attempt found the lock held by another owner
	err       *apiError // the answer when not granted
	failure   error     // for the observer, when not granted
	gone      bool      // the client went away while waiting
}

// acquire tries to acquire for req; with a wait budget it holds the request
// open: it subscribes to the lock's releases on the engine and tries again
// on every wake-up and when the holder's ttl runs out, until the lock is
// granted, the budget ends, the client goes away (ctx) or the server shuts
// down. Waiting requests are bounded by the server's waiter limits.
//
// On an engine with a waiter queue (engine.Queuer) the request waits in the
// lock's queue, as a Client does: it enters it on its first refused
// attempt, is woken only as the head, renews its entry every WaiterTTL/3,
// and leaves it when it gives up. So HTTP waiters and Clients are served in
// one arrival order.
func (s *Server) acquire(ctx context.Context, req engine.AcquireRequest, budget time.Duration) acquireOutcome {
	start := time.Now()
	var o acquireOutcome
	var lastErr error
	q, queues := s.eng.(engine.Queuer)
	own := budget > 0 && queues // the server's own queue entry (the remote engine's is its own)
	if own {
		req.Waiter, req.WaiterTTL = newOwner(), distlock.WaiterTTL
	}
	queued := false
	defer func() {
		if own && queued && !o.grant.Acquired {
			lctx, cancel := engineContext(ctx)
			_ = q.Leave(lctx, req.Name, req.Waiter)
			cancel()
		}
	}()
	try := func() bool {
		g, err := s.engineAcquire(ctx, req)
		lastErr = err
		if err != nil {
			return false
		}
		o.grant = g
		if !g.Acquired {
			o.contended = true
		}
		queued = queued || g.Queued
		return g.Acquired
	}
	done := func() acquireOutcome {
		o.waited = time.Since(start)
		return o
	}
	if try() {
		return done()
	}
	if budget == 0 {
		return s.notGranted(&o, req.Name, start, lastErr, nil)
	}
	if s.isStopping() {
		o.err, o.failure = shuttingDown(), distlock.ErrClosed
		return done()
	}
	leave, e := s.limits.enter(req.Name)
	if e != nil {
		o.err, o.failure = e, errTooManyWaiters
		return done()
	}
	defer leave()
	s.obs.Waiting(req.Name, 1)
	defer s.obs.Waiting(req.Name, -1)

	deadline := start.Add(budget)
	var wake <-chan struct{}
	sctx, cancel := context.WithTimeout(ctx, min(subscribeTimeout, time.Until(deadline)))
	var sub engine.Subscription
	var err error
	if req.Waiter != "" {
		sub, err = q.SubscribeWaiter(sctx, req.Name, req.Waiter)
	} else {
		sub, err = s.eng.Subscribe(sctx, req.Name)
	}
	cancel()
	if err == nil {
		defer sub.Close()
		wake = sub.C()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	beat := newQueueBeat(s, req)
	defer beat.stop()
	for {
		// Try again first: the lock may have been released before the
		// subscription, or the wake-up came.
		if try() {
			return done()
		}
		left := time.Until(deadline)
		if errors.Is(lastErr, engine.ErrClosed) {
			return s.notGranted(&o, req.Name, start, lastErr, nil)
		}
		if left <= 0 {
			return s.notGranted(&o, req.Name, start, lastErr, context.DeadlineExceeded)
		}
		d := o.grant.HolderTTL
		switch {
		case lastErr != nil:
			d = jitter(pollFallback)
		case o.grant.Retry > 0:
			d = o.grant.Retry
		case o.grant.Queued && !o.grant.Head && wake != nil:
			d = left // not the head: only its wake-up (or heartbeat) calls it
		case d < 0: // no expiry: only a release ends it
			d = jitter(10 * pollFallback)
		case d < time.Millisecond:
			d = time.Millisecond
		}
		if wake == nil && d > pollFallback {
			d = jitter(pollFallback)
		}
		timer.Reset(min(d, left))
		select {
		case <-wake:
		case <-beat.wake:
		case <-timer.C:
		case <-ctx.Done():
			o.gone = true
			o.failure = &distlock.WaitError{Name: req.Name, Waited: time.Since(start), Ctx: ctx.Err(), Last: lastErrOrLocked(&o, lastErr)}
			return done()
		case <-s.stopping:
			o.err, o.failure = shuttingDown(), distlock.ErrClosed
			return done()
		}
	}
}

// notGranted fills in the answer of an acquire that gave up: locked, or
// backend_unavailable when the last attempt failed. ctxErr is the reason
// the wait ended (nil for a single attempt).
func (s *Server) notGranted(o *acquireOutcome, name string, start time.Time, lastErr, ctxErr error) acquireOutcome {
	o.waited = time.Since(start)
	if lastErr != nil {
		o.err = engineErr("acquire", lastErr)
		o.failure = &distlock.BackendError{Op: "acquire", Name: name, Err: lastErr}
	} else {
		ttl := holderTTLms(o.grant.HolderTTL)
		msg := fmt.Sprintf("held by another owner (its lease ends in %v)", o.grant.HolderTTL.Round(time.Millisecond))
		if o.grant.HolderTTL < 0 {
			msg = "held by another owner, with no expiry (a leaked lock: see force-release)"
		}
		if ctxErr != nil {
			msg += fmt.Sprintf("; gave up after waiting %v", o.waited.Round(time.Millisecond))
		}
		if o.grant.Reserved {
			msg = fmt.Sprintf("free, but kept for the waiters queued for it (for %v at least)", o.grant.HolderTTL.Round(time.Millisecond))
		}
		o.err = newError(http.StatusConflict, api.CodeLocked, msg)
		o.err.detail.HolderTTLMs = &ttl
		o.err.detail.Queued, o.err.detail.Head, o.err.detail.Reserved = o.grant.Queued, o.grant.Head, o.grant.Reserved
		o.err.detail.HolderID = holderID(o.grant.Holder)
		o.err.detail.Holder = o.grant.Holder // shown to admins only: see handleAcquire
		if o.grant.Retry > 0 {
			o.err.detail.RetryMs = max(1, o.grant.Retry.Milliseconds())
		}
		o.failure = &distlock.LockedError{Name: name, TTL: o.grant.HolderTTL, Queued: o.grant.Reserved}
	}
	if ctxErr != nil {
		waited := o.waited.Milliseconds()
		o.err.detail.WaitedMs = &waited
		o.failure = &distlock.WaitError{Name: name, Waited: o.waited, Ctx: ctxErr, Last: o.failure}
	}
	return *o
}

func lastErrOrLocked(o *acquireOutcome, lastErr error) error {
	if lastErr != nil {
		return &distlock.BackendError{Op: "acquire", Err: lastErr}
	}
	return &distlock.LockedError{TTL: o.grant.HolderTTL}
}

// errTooManyWaiters is the observer's reason for a waiter turned away.
var errTooManyWaiters = errors.New("too many waiters")

// engineAcquire makes one engine attempt, detached from the request's
// cancellation so that its outcome is always known.
func (s *Server) engineAcquire(ctx context.Context, req engine.AcquireRequest) (engine.Grant, error) {
	ectx, cancel := engineContext(ctx)
	defer cancel()
	return s.eng.Acquire(ectx, req)
}

// engineContext is the context of an engine operation made for a request:
// the request's values, never its cancellation, bounded by engineTimeout.
func engineContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), engineTimeout)
}

// holderTTLms renders a holder's time left: -1 for no expiry.
func holderTTLms(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// engineErr answers an engine failure; a closed engine means the server
// is shutting down.
func engineErr(op string, err error) *apiError {
	if errors.Is(err, engine.ErrClosed) {
		return shuttingDown()
	}
	return backendUnavailable(op, err)
}

// newOwner returns a fresh random owner token (128 bits, hex).
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jitter returns a duration uniformly in [d/2, 3d/2).
func jitter(d time.Duration) time.Duration { return d/2 + mrand.N(d) }

// queueBeat renews a held-open request's entry in the engine's queue every
// WaiterTTL/3 from its own goroutine, and signals wake when the entry heads
// the queue of a free lock or was dropped (the request then tries again).
type queueBeat struct {
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func newQueueBeat(s *Server, req engine.AcquireRequest) *queueBeat {
	h := &queueBeat{wake: make(chan struct{}, 1), done: make(chan struct{})}
	if req.Waiter == "" {
		return h
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(req.WaiterTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), req.WaiterTTL/3)
			res, err := s.eng.Extend(ctx, []engine.ExtendRequest{{Name: req.Name, Owner: req.Waiter, TTL: req.WaiterTTL, Waiter: true}})
			cancel()
			if err == nil && len(res) == 1 && res[0].Err == nil && (res[0].Wake || res[0].Status != engine.Extended) {
				select {
				case h.wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	return h
}

func (h *queueBeat) stop() {
	close(h.done)
	h.wg.Wait()
}
