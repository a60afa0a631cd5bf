package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/waiting"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

// acquireOutcome is what a (possibly waiting) acquire came to.
type acquireOutcome struct {
	grant     engine.Grant // the last answer
	sent      time.Time    // the send time of the attempt that got grant (set with it)
	waited    time.Duration
	contended bool        // an attempt found the lock held by another owner
	err       *apiError   // the answer when not granted
	failure   error       // for the observer, when not granted
	gone      bool        // the client went away while waiting
	waiter    string      // the server's queue entry for the wait ("" when it did not queue)
	shared    *sharedSpec // a shared lock's permits were asked for
}

// acquireCall is one acquire request as the server runs it.
type acquireCall struct {
	req    engine.AcquireRequest
	budget time.Duration // how long it may wait (0: a single attempt)
	// shared: the request (whose Kind is shared.kind) is for a shared
	// lock's permits (engine.AcquireRequest.Kind), and waits in its queue;
	// nil for a mutex.
	shared *sharedSpec
	// minted: the server made the request's owner or attempt, so that a
	// grant nobody will be told of (the client gone, an attempt cut off
	// by the wait's end) is the server's to release (settleAcquire).
	minted bool
}

// acquire tries to acquire for c; with a wait budget it holds the request
// open and waits in the wait loop the Client uses (internal/waiting): on an
// engine with a waiter queue (engine.Queuer) the request enters the lock's
// queue on its first refused attempt, is woken only as the head, renews its
// entry every WaiterTTL/3, and leaves it when it gives up, so HTTP waiters
// and Clients are served in one arrival order; elsewhere it subscribes to
// the lock's releases. It tries again on every wake-up and when the
// holder's ttl runs out, until the lock is granted, the budget ends, the
// client goes away (ctx) or the server shuts down. An attempt in flight
// when the budget ends or the client goes is not waited for
// (flightAcquire): the answer comes at the budget's end plus the queue's
// leave (waiting.LeaveTimeout), whatever the backend does. Waiting requests are
// bounded by the server's waiter limits.
func (s *Server) acquire(ctx context.Context, c acquireCall) acquireOutcome {
	start := time.Now()
	o := acquireOutcome{shared: c.shared}
	// The wait's context: the request's, ended at the budget's end. A
	// waiting request's attempts are cut off by it (flight.go), so that
	// the answer comes at the deadline and not when a stalled backend
	// gives up; a single attempt (no budget) waits for its answer.
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if c.budget > 0 {
		wctx, cancel = context.WithDeadline(ctx, start.Add(c.budget))
	}
	defer cancel()
	a := &attempts{s: s, c: &c, o: &o, ctx: ctx, wctx: wctx,
		// A failing engine ends the wait before its budget does: at once
		// for an error no retry mends (a closed engine: the server is
		// shutting down; refused input: another kind, limit or weight, an
		// upgrade; a schema never migrated), else after
		// distlock.DefaultBackendFailureBudget.
		failures: &waiting.Failures{Engine: s.eng, Budget: distlock.DefaultBackendFailureBudget}}
	if a.try().Done || c.budget == 0 {
		return s.finish(&o, c.req.Name, start, a.lastErr, nil)
	}
	if wctx.Err() != nil {
		return s.waitEnded(ctx, &o, c.req.Name, start, a.lastErr, wctx.Err())
	}
	if s.isStopping() {
		o.err, o.failure = shuttingDown(), distlock.ErrClosed
		return s.finish(&o, c.req.Name, start, nil, nil)
	}
	leave, e := s.limits.enter(c.req.Name)
	if e != nil {
		o.err, o.failure = e, errTooManyWaiters
		return s.finish(&o, c.req.Name, start, nil, nil)
	}
	defer leave()
	s.obs.Waiting(c.req.Name, 1)
	defer s.obs.Waiting(c.req.Name, -1)
	loop := waiting.Loop{Engine: s.eng, Name: c.req.Name, Stop: s.stopping, Detached: engineContext,
		Try: func(context.Context) waiting.Answer { return a.try() }}
	if q, ok := s.eng.(engine.Queuer); ok {
		// The server's own queue entry, with its own heartbeat: the
		// request's (the remote engine's waiter is the remote side's).
		// Its id names the request's owner, for the wait-for graph.
		c.req.Waiter, c.req.WaiterTTL = distlock.WaiterID(s.owners.Next(), c.req.Owner), distlock.WaiterTTL
		o.waiter = c.req.Waiter
		beat := waiting.NewBeat(s.eng, c.req.Name, c.req.Waiter, c.req.WaiterTTL)
		if c.shared != nil {
			// A shared lock's queue: its heartbeats and its leave.
			beat.Kind, loop.Kind = c.shared.kind, c.shared.kind
		}
		// Stopped without waiting for a heartbeat in flight (bounded by
		// its own timeout): a stalled backend does not delay the answer.
		defer s.detach(beat.Stop)
		loop.Queue, loop.Waiter, loop.Queued, loop.Kick = q, c.req.Waiter, beat.Start, beat.Kick()
	}
	err := loop.Run(wctx)
	return s.waitEnded(ctx, &o, c.req.Name, start, a.lastErr, err)
}

// attempts runs the attempts of one acquire call (c: its request, with
// the server's queue entry once it has one) and keeps what they came to.
type attempts struct {
	s         *Server
	c         *acquireCall
	o         *acquireOutcome
	ctx, wctx context.Context // the request's, and the wait's (acquire)
	failures  *waiting.Failures
	lastErr   error
	answered  bool // an attempt was answered (or failed): its answer explains a give-up
}

// try makes one attempt, cut off by the wait's end when the call waits
// (flightAcquire).
func (a *attempts) try() waiting.Answer {
	sent := time.Now()
	var g engine.Grant
	var err error
	if a.c.budget > 0 {
		g, err = a.s.flightAcquire(a.wctx, a.ctx, *a.c)
	} else {
		g, err = a.s.engineAcquire(a.ctx, a.c.req)
	}
	if errors.Is(err, errAbandoned) {
		// The wait ended with the attempt in flight: the answer is the
		// last one's, if any (the loop sees wctx ended and returns).
		if !a.answered {
			a.lastErr = err
		}
		return waiting.Answer{Failed: true, Err: err}
	}
	a.answered, a.lastErr = true, err
	if err != nil {
		return waiting.Answer{Failed: true, Err: err, Done: a.failures.Note(sent, err) != nil}
	}
	_ = a.failures.Note(sent, nil)
	a.o.grant, a.o.sent = g, sent
	if !g.Acquired {
		a.o.contended = true
	}
	return waiting.Answer{Grant: g, Done: g.Acquired}
}

// waitEnded completes the outcome of a wait that ended with err
// (waiting.Loop.Run's): granted (nil), the server shutting down, the
// client gone (ctx ended), or the budget spent.
func (s *Server) waitEnded(ctx context.Context, o *acquireOutcome, name string, start time.Time, lastErr, err error) acquireOutcome {
	switch {
	case err == nil:
		return s.finish(o, name, start, lastErr, nil)
	case errors.Is(err, waiting.ErrStopped):
		o.err, o.failure = shuttingDown(), distlock.ErrClosed
		return s.finish(o, name, start, nil, nil)
	case ctx.Err() != nil:
		o.gone = true
		o.failure = &distlock.WaitError{Name: name, Waited: time.Since(start), Ctx: ctx.Err(), Last: lastErrOrLocked(o, lastErr)}
		return s.finish(o, name, start, nil, nil)
	}
	return s.finish(o, name, start, lastErr, context.DeadlineExceeded)
}

// finish completes the outcome: granted, an answer already set, or not
// granted (see notGranted).
func (s *Server) finish(o *acquireOutcome, name string, start time.Time, lastErr, ctxErr error) acquireOutcome {
	if o.grant.Acquired && lastErr == nil || o.err != nil || o.gone {
		o.waited = time.Since(start)
		return *o
	}
	return s.notGranted(o, name, start, lastErr, ctxErr)
}

// notGranted fills in the answer of an acquire that gave up: locked, or
// backend_unavailable when the last attempt failed. ctxErr is the reason
// the wait ended (nil for a single attempt).
func (s *Server) notGranted(o *acquireOutcome, name string, start time.Time, lastErr, ctxErr error) acquireOutcome {
	o.waited = time.Since(start)
	if lastErr != nil {
		o.err = engineErr("acquire", lastErr)
		o.failure = attemptFailure(name, lastErr)
	} else {
		// The last answer's time left, as of now (waiting.Aged): a waiter
		// queued behind the head asks once, and may give up much later.
		left := waiting.Aged(o.grant.HolderTTL, time.Since(o.sent))
		ttl := wire.HolderTTLMs(left)
		locked := &distlock.LockedError{Name: name, TTL: left, Queued: o.grant.Reserved}
		msg := fmt.Sprintf("held by another owner (its lease ends in %v)", left.Round(time.Millisecond))
		switch {
		case o.shared != nil:
			// What the shared lock's state refused, worded as the Client
			// words it (a reader behind a queued writer is not "free").
			locked.Kind, locked.Weight = o.shared.kind, o.shared.weight
			msg = locked.State()
		case o.grant.HolderTTL < 0:
			msg = "held by another owner, with no expiry (a leaked lock: see force-release)"
		case o.grant.Reserved:
			msg = fmt.Sprintf("free, but kept for the waiters queued for it (for %v at least)", left.Round(time.Millisecond))
		}
		if ctxErr != nil {
			msg += fmt.Sprintf("; gave up after waiting %v", o.waited.Round(time.Millisecond))
		}
		o.err = newError(http.StatusConflict, api.CodeLocked, msg)
		o.err.detail.HolderTTLMs = &ttl
		o.err.detail.Queued, o.err.detail.Head, o.err.detail.Reserved = o.grant.Queued, o.grant.Head, o.grant.Reserved
		o.err.detail.HolderID = holderID(o.grant.Holder)
		o.err.detail.Holder = o.grant.Holder // shown to admins only: see handleAcquire
		if o.grant.Retry > 0 {
			o.err.detail.RetryMs = max(1, o.grant.Retry.Milliseconds())
		}
		o.failure = locked
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
		return attemptFailure("", lastErr)
	}
	return &distlock.LockedError{TTL: o.grant.HolderTTL}
}

// attemptFailure is the observer's error for an attempt the engine
// answered with err: a refusal of the request (another kind, limit or
// weight, an upgrade, a feature the engine lacks: the caller's mistake,
// which the metrics count as refused) as distlock's *ArgumentError,
// ErrUpgrade or *UnsupportedError; anything else as a *BackendError.
func attemptFailure(name string, err error) error {
	var ae *engine.ArgumentError
	switch {
	case errors.As(err, &ae):
		return &distlock.ArgumentError{Arg: ae.Arg, Reason: ae.Reason}
	case errors.Is(err, engine.ErrUpgrade):
		return distlock.ErrUpgrade
	case errors.Is(err, errors.ErrUnsupported):
		return &distlock.UnsupportedError{Feature: "acquire", Reason: err.Error()}
	}
	return &distlock.BackendError{Op: "acquire", Name: name, Err: err}
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

// engineErr answers an engine failure; a closed engine means the server
// is shutting down.
// Input the engine refused (an *engine.ArgumentError: a lock of another
// kind, limit or weight, a ttl it cannot keep) is invalid_argument, its arg
// the request's field (requestField), and an upgrade of a reader-writer
// lock's side upgrade_refused: nothing changed.
func engineErr(op string, err error) *apiError {
	var ae *engine.ArgumentError
	switch {
	case errors.Is(err, engine.ErrClosed):
		return shuttingDown()
	case errors.Is(err, engine.ErrUpgrade):
		return newError(http.StatusConflict, api.CodeUpgradeRefused, err.Error())
	case errors.Is(err, engine.ErrFenceExhausted):
		return newError(http.StatusConflict, api.CodeFenceExhausted, err.Error())
	case errors.As(err, &ae):
		field := requestField(ae.Arg)
		return badRequest(field, "invalid "+field+": "+ae.Reason)
	case errors.Is(err, errors.ErrUnsupported):
		// The engine cannot do it at all (a quorum's semaphore limit
		// above 1): no retry mends it.
		return newError(http.StatusNotImplemented, api.CodeNotSupported, op+": "+err.Error())
	}
	if fk, ok := foreignKey(err); ok {
		e := newError(http.StatusConflict, api.CodeForeignKey, op+": "+err.Error())
		e.detail.Key = fk.ForeignKey()
		return e
	}
	return backendUnavailable(op, err)
}

// foreignKeyError is an engine's error for a key at a lock's place that
// distlock did not write (the Redis and etcd engines' ForeignKeyError),
// told by its method.
type foreignKeyError interface {
	error
	ForeignKey() string
}

// foreignKey returns err's foreignKeyError, if it holds one.
func foreignKey(err error) (foreignKeyError, bool) {
	var fk foreignKeyError
	ok := errors.As(err, &fk)
	return fk, ok
}

// requestFields maps an engine's argument names (engine.ArgumentError.Arg)
// to the request fields they come from, where those are named otherwise.
var requestFields = map[string]string{"ttl": "ttl_ms"}

// requestField is the request field an engine's argument name comes from:
// an answer names what the client sent (ttl_ms, as the server's own checks
// of it do), not the engine's name for it.
func requestField(arg string) string {
	if f, ok := requestFields[arg]; ok {
		return f
	}
	return arg
}
