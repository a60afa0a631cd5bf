package distlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/waiting"
)

// errValidityUsedUp: the grant's reply came back after its validity ended.
var errValidityUsedUp = errors.New("grant arrived after its validity was used up")

// Acquire waits until the lock name is granted or ctx ends, and returns the
// lease. The wait budget is ctx: there is no hidden retry count. A wait
// does not outlast a backend that cannot work, though: an error that no
// retry can mend (a schema never migrated, a token the server refuses, an
// ACL refusal, a command the backend does not know) ends it at once, and
// attempts that keep failing end it after the Client's backend failure
// budget (WithBackendFailureBudget), each time with the last attempt's
// *BackendError, whatever is left of ctx.
//
// Waiting is driven by notification. On an engine that keeps a waiter queue
// (engine.Queuer: memory, Redis) the call enters the lock's queue in the
// lock authority on its first refused attempt, and only the head of the
// queue is woken when the lock is freed; WithFair makes the order strict.
// Elsewhere the waiter subscribes to the lock's releases. Either way it
// sleeps at most until the holder's lease would expire, so a holder that
// dies without releasing is noticed too. When ctx ends, the error is a
// *WaitError that matches ctx's error and the last attempt's (ErrLocked or
// ErrBackend); when the Client is closed, one that matches ErrClosed. A
// wait returns within a small overrun of ctx's deadline on every engine
// (see docs/ARCHITECTURE.md, "Waiting").
func (c *Client) Acquire(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	return c.observed(ctx, name, opts, waitForIt)
}

// TryAcquire makes one attempt. When another owner holds the lock it returns
// a *LockedError (matching ErrLocked) that says how long the holder's lease
// has left. It never enters a waiter queue, and it is refused a free lock
// that is kept for queued waiters (LockedError.Queued).
func (c *Client) TryAcquire(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	return c.observed(ctx, name, opts, tryOnce)
}

// observed runs acquire and reports it to the Observer. A call that the
// Client refused before it began (bad input, an option the engine cannot
// honour: an error matching ErrInvalidArgument returned before its
// observation started) is not reported; every other end is, the engine's
// refusals included (another kind than the name's, ErrUpgrade, a weight
// beyond the stored limit, an *UnsupportedError: FailureReason's refused).
func (c *Client) observed(ctx context.Context, name string, opts []Option, p policy) (*Lease, error) {
	var ob observation
	return c.observedAs(ctx, name, opts, p, &ob)
}

// observedAs is observed with the call's observation ob: a zero one, or
// one started before the call (a set's member, acquireOrdered), which the
// call takes on instead of starting its own.
func (c *Client) observedAs(ctx context.Context, name string, opts []Option, p policy, ob *observation) (*Lease, error) {
	start := time.Now()
	if ob.started {
		start = ob.start
	}
	l, contended, err := c.acquire(ctx, name, opts, p, ob)
	ob.end(l, err, time.Since(start))
	switch {
	case err == nil:
		c.obs.Acquired(name, time.Since(start), contended)
	case ob.started || !errors.Is(err, ErrInvalidArgument):
		c.obs.AcquireFailed(name, time.Since(start), err)
	}
	return l, err
}

// policy is how an acquire call attempts: once (TryAcquire), or until
// granted or ctx ends (Acquire).
type policy int

const (
	tryOnce policy = iota
	waitForIt
)

// failPolicy is what a grant that fails locally (validity used up, Client
// closed) does with the hold it was given.
type failPolicy int

const (
	// dropHold releases it: the call's own attempt added it.
	dropHold failPolicy = iota
	// keepHold leaves it: it was there before (Attach).
	keepHold
)

// acquire is one attempt (TryAcquire), or attempts under a waiting policy:
// the engine's queue when it has one (queuewait.go), else the Client's own
// turns (turn.go) around the wait loop (wait.go).
func (c *Client) acquire(ctx context.Context, name string, opts []Option, p policy, ob *observation) (_ *Lease, contended bool, _ error) {
	wait := p == waitForIt
	if err := c.begin(ctx, name); err != nil {
		return nil, false, err
	}
	defer c.endCall()
	o := buildOptions(opts)
	if err := c.checkOptions(&o); err != nil {
		return nil, false, err
	}
	q, queues := c.eng.(engine.Queuer)
	if o.shared() {
		if _, ok := c.eng.(engine.Sharer); !ok {
			return nil, false, &UnsupportedError{Feature: o.kind.String(), Engine: c.node, Reason: "the engine keeps no shared locks (engine.Sharer)"}
		}
	} else if wait && o.fair && !(queues && engine.CapabilitiesOf(c.eng).Fair) {
		return nil, false, &UnsupportedError{Feature: "WithFair", Engine: c.node, Reason: "the engine keeps no waiter queue that can be fair"}
	}
	a := &attempt{c: c, ctx: ctx, name: name, o: o, start: time.Now(),
		req: engine.AcquireRequest{Name: name, Owner: o.owner, TTL: o.ttl, Metadata: o.metadata, Waiting: wait, Announce: o.announce, Aged: true,
			Kind: o.kind, Limit: o.limit, Weight: o.weight}}
	if o.owner != "" {
		a.req.Attempt = c.owners.Next()
	}
	if !ob.started {
		*ob = c.startObservation(ctx, name, o, wait)
	}
	ob.stampInto(o, &a.req)
	ob.a = a
	// One attempt first: an uncontended lock costs nothing more. Not when
	// goroutines of this Client wait for the name already: a newcomer does
	// not take the lock ahead of them (Behind, or a local turn first).
	var l *Lease
	var err error
	if wait {
		a.failures = &waiting.Failures{Engine: c.eng, Budget: c.failureBudget}
	}
	ahead := wait && o.owner == "" && c.waitsOn(name)
	// A name this Client waited for lately is most likely held: the wait
	// loop's first attempt (which queues when refused) is the first one.
	// Not with an event observer, whose "waiting" event must follow a
	// refusal.
	skip := wait && queues && o.owner == "" && ob.eo == nil && c.waited.recent(name, a.start)
	if (!ahead || queues) && !skip {
		// A fair call never takes a free lock ahead of the queue, even on
		// its first attempt, which carries no waiter fields yet.
		if ahead || (wait && o.fair) {
			a.req.Order = engine.OrderBehind
		}
		if l, err = a.tryOnce(ctx); l != nil || err != nil {
			return l, a.contended, err
		}
		if !wait {
			return nil, a.contended, a.last
		}
	}
	if ahead && !queues {
		a.contended = true // others of this Client wait for it: take a turn first
	}
	// Refused (or failed): wait, on a context that Close ends.
	var stop func()
	a.ctx, stop = c.closable(ctx)
	defer stop()
	ob.waiting(a)
	l, err = a.wait(q)
	if q != nil {
		c.waited.note(name, time.Now())
	}
	return l, a.contended, err
}

// attempt is the state of one Acquire or TryAcquire call.
type attempt struct {
	c         *Client
	ctx       context.Context // the caller's; while waiting, also ended by Close
	name      string
	o         options
	req       engine.AcquireRequest
	start     time.Time
	g         engine.Grant // the last answer
	last      error        // the last refusal (*LockedError) or failure (*BackendError)
	lastSent  time.Time    // the send time of the attempt that last refused
	contended bool         // an attempt found the lock held by another owner
	queued    bool         // an attempt entered the engine's waiter queue
	// failures ends a wait on a backend that cannot work (nil for
	// TryAcquire, whose one attempt ends the call anyway).
	failures *waiting.Failures
	// leaving is set before the wait leaves the engine's queue (a waiter
	// that gave up): a queue entry that an attempt abandoned in flight
	// makes after that is left again when its answer comes (sendSettled).
	leaving *atomic.Bool
}

// tryOnce makes the attempt before a wait: try, bounded by the failure
// budget like the wait loop's attempts, and ending the call when the
// backend failed for good (as the loop's Failures decide).
func (a *attempt) tryOnce(ctx context.Context) (*Lease, error) {
	sent := time.Now()
	actx, cancel := a.failures.Context(ctx, sent)
	defer cancel()
	l, err := a.try(actx)
	if l != nil || err != nil {
		return l, err
	}
	return nil, a.failed(a.failures.Note(sent, a.backendCause()))
}

// backendCause is the engine's error behind the last attempt's
// *BackendError; nil when the last attempt did not fail.
func (a *attempt) backendCause() error {
	var be *BackendError
	if errors.As(a.last, &be) {
		return be.Err
	}
	return nil
}

// failed turns the failure budget's verdict (a *waiting.FailedError, or
// nil to go on waiting) into the call's error: the last attempt's
// *BackendError, which says how long the attempts kept failing.
func (a *attempt) failed(verdict error) error {
	var fe *waiting.FailedError
	if !errors.As(verdict, &fe) {
		return nil
	}
	var be *BackendError
	if !errors.As(a.last, &be) {
		return verdict // not reached: only failed attempts are judged
	}
	be.Failing = fe.Failing
	return be
}

// try makes one attempt, sent on actx (the call's context, bounded by the
// failure budget). It returns the lease when granted; an error when the
// call must end (its context ended, or the Client closed); and neither when
// the lock was refused or the engine failed, which a.last then says.
func (a *attempt) try(actx context.Context) (*Lease, error) {
	if err := ctxErr(a.ctx); err != nil {
		return nil, a.giveUp(err)
	}
	c := a.c
	if a.o.owner == "" {
		// A fresh random owner per attempt: a failed attempt's clean-up
		// (by owner token) can never touch a later attempt's grant.
		a.req.Owner = c.owners.Next()
		a.req.Attempt, a.req.OneOff = a.req.Owner, true
	}
	sent := time.Now()
	g, err := a.send(actx)
	a.g = g
	a.queued = a.queued || g.Queued
	switch {
	case err == nil && g.Acquired:
		l, err := c.grant(a.ctx, a.name, a.req.Owner, a.o, g.Token, sent, g.Age, dropHold)
		if err == nil {
			l.reentered = g.Count > 1
			return l, nil
		}
		if errors.Is(err, ErrClosed) {
			// Close began: the hold was dropped; no further attempt.
			return nil, a.giveUp(ErrClosed)
		}
		a.last = err
	case errors.Is(err, engine.ErrUpgrade):
		return nil, fmt.Errorf("%w (%q)", ErrUpgrade, a.name)
	case errors.Is(err, engine.ErrFenceExhausted):
		// No token above the name's high-water fits in 53 bits: nothing
		// was granted, and trying again will not help.
		return nil, fmt.Errorf("%w (%q)", engine.ErrFenceExhausted, a.name)
	case isArgument(err):
		// A rule of the engine's (a server's) refused the input: nothing
		// changed, and trying again will not help.
		return nil, argumentFrom(err)
	case errors.Is(err, errors.ErrUnsupported):
		// The engine cannot do what was asked (WithFair behind a server
		// whose engine keeps no queue, a shared lock on one that keeps
		// none, a semaphore on a quorum): trying again will not help.
		feature := "WithFair"
		if a.o.shared() {
			feature = a.o.kind.String()
		}
		return nil, &UnsupportedError{Feature: feature, Engine: c.node, Reason: err.Error(), Err: err}
	case err != nil:
		// The attempt may have been granted all the same (a lost reply);
		// with a random owner, releasing by it is always safe. (Not after
		// an error that says nothing was done, like a refused token.)
		if a.o.owner == "" && !engine.IsPermanent(c.eng, err) && !errors.Is(err, errAbandoned) {
			req, kind, leaving := a.req, a.o.kind, a.leaving
			c.inBackground(func() { c.dropAttempt(req, kind, leaving) })
		}
		if actx.Err() != nil && a.ctx.Err() == nil {
			// The failure budget ran out while the attempt waited: the
			// failure before it, if any, explains more.
			if a.backendCause() != nil {
				return nil, nil
			}
			err = fmt.Errorf("%w (%v)", context.Cause(actx), err)
		}
		if a.ctx.Err() != nil {
			// The context ended the attempt: the previous attempt's
			// outcome (say, locked) is the better explanation, if any.
			// (Close's cancellation explains nothing about the backend.)
			if a.last == nil && ctxErr(a.ctx) != ErrClosed {
				a.last = &BackendError{Op: "acquire", Name: a.name, Node: c.node, Err: err}
			}
			return nil, a.giveUp(ctxErr(a.ctx))
		}
		a.last = &BackendError{Op: "acquire", Name: a.name, Node: c.node, Err: err}
	default:
		a.last, a.lastSent = &LockedError{Name: a.name, TTL: g.HolderTTL, Queued: g.Reserved, Kind: a.o.kind, Weight: a.o.weight}, sent
		a.contended = true
	}
	return nil, nil
}

// send sends the attempt's request to the engine (any kind: the request
// carries it). When ctx ends before the answer, the request is settled in
// the background (sendSettled): a late grant is released once it arrives.
func (a *attempt) send(ctx context.Context) (engine.Grant, error) {
	if a.c.inline {
		return a.c.eng.Acquire(ctx, a.req)
	}
	return a.sendSettled(ctx)
}

// sendSettled is send on an engine that answers over a network.
func (a *attempt) sendSettled(ctx context.Context) (engine.Grant, error) {
	c, req, kind, own, leaving := a.c, a.req, a.o.kind, a.o.owner != "", a.leaving
	return sendSettled(c, ctx, func(ctx context.Context) (engine.Grant, error) {
		return c.eng.Acquire(ctx, req)
	}, func(g engine.Grant, err error) {
		switch {
		case err == nil && g.Acquired || err != nil && !own && !engine.IsPermanent(c.eng, err):
			// A grant is one hold to drop; a failure may have granted
			// all the same, which only a random owner can safely release.
			c.dropAttempt(req, kind, leaving)
		case err == nil && g.Queued:
			// A queue entry made after the wait left the queue.
			c.leaveIfLeft(req, kind, leaving)
		}
	})
}

// dropAttempt drops the hold that the grant of req, an attempt nobody
// keeps, may have added (an undo), then leaves the queue again when the
// attempt's wait has left it (leaveIfLeft): an undo puts the queue entry
// the grant took back in its place (so that a quorum's minority grant
// costs its waiter no place), where the wait's own Leave found nothing.
func (c *Client) dropAttempt(req engine.AcquireRequest, kind engine.Kind, leaving *atomic.Bool) {
	c.dropHold(undo(req.Name, req.Owner, kind), req.TTL)
	c.leaveIfLeft(req, kind, leaving)
}

// leaveIfLeft takes req's waiter out of the queue when its wait has left
// the queue already (leaving, set before the wait's Leave is sent): an
// entry made or put back after that Leave ran would stay, dead, until its
// heartbeat deadline. When the flag is not set yet, the wait's own Leave,
// sent later, finds the entry.
func (c *Client) leaveIfLeft(req engine.AcquireRequest, kind engine.Kind, leaving *atomic.Bool) {
	if req.Waiter != "" && leaving != nil && leaving.Load() {
		c.leaveNow(engine.LeaveRequest{Name: req.Name, Waiter: req.Waiter, Kind: kind})
	}
}

// giveUp is the error of a wait that ended for why: the caller's context
// error, or ErrClosed when the Client was closed.
func (a *attempt) giveUp(why error) error {
	last := a.last
	if le, ok := last.(*LockedError); ok {
		// The state as of now: the time left then, less the time since.
		aged := *le
		aged.TTL = waiting.Aged(le.TTL, time.Since(a.lastSent))
		last = &aged
	}
	return &WaitError{Name: a.name, Waited: time.Since(a.start), Ctx: why, Last: last}
}

// grant turns a confirmed grant (or, for Attach, extension) sent at sent into
// a Lease whose validity counts from sent less age (engine.Grant.Age). When
// the validity was used up before the reply arrived, or the client was
// closed meanwhile, it fails, and drops the hold that acquire added when
// onFail is dropHold.
func (c *Client) grant(ctx context.Context, name, owner string, o options, token uint64, sent time.Time, age time.Duration, onFail failPolicy) (*Lease, error) {
	fail := func(err error) (*Lease, error) {
		if onFail == dropHold {
			c.cleanup(undo(name, owner, o.kind), o.ttl)
		}
		return nil, err
	}
	valid := sent.Add(-max(age, 0))
	if !c.skipValidity && !time.Now().Before(valid.Add(o.ttl-drift(o.ttl))) {
		return fail(&BackendError{Op: "acquire", Name: name, Node: c.node, Err: errValidityUsedUp})
	}
	l := newLease(c, ctx, name, owner, token, o, sent, valid)
	if !c.track(l) {
		return fail(ErrClosed)
	}
	if onFail == keepHold {
		// Attach: its lease is a hold whose end the Observer hears, so
		// it hears its beginning too (the acquire path reports its own
		// grants), before the lease can end: the holders stay balanced.
		c.obs.Acquired(name, time.Since(sent), false)
	}
	l.start()
	return l, nil
}
