package distlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/engine"
)

// Lease is one hold of a lock. It knows a local validity deadline on the
// monotonic clock: the send time of the last confirmed acquire or extend,
// plus the ttl, minus a drift allowance (ttl/100 + 2ms). Until then nobody
// else can have been granted the lock (given the clock assumptions in
// README.md).
//
// With auto-renewal (the default) a watchdog extends the lease every ttl/3.
// When ownership can no longer be proven — the deadline passes without a
// confirmed renewal, or the lock service says the lock is gone or held by
// another owner — the lease is lost: Done is closed, Context is cancelled and
// Err returns a *LostError. This happens no later than the deadline, driven
// by a local timer, even if every renewal hangs.
//
// The checks do not wait for that timer: Err, a call of Done, Extend and
// Release, and the Err, Done and Value methods of Context (so
// context.Cause too) compare the monotonic clock with the deadline
// themselves, and end the lease when it has passed, before they answer. A
// check made after the deadline therefore reports the loss even when the
// timer has not run yet (a process stopped past its deadline and then
// continued, a starved timer goroutine). What is not re-checked is a
// channel obtained before the deadline: a Done channel kept from an earlier
// call, or the Done channel of a context derived from Context, is closed by
// the timer (or by the first check after the deadline), a moment after the
// deadline. Once the lease is reported lost it stays lost: a renewal
// answered after the deadline does not revive it.
//
// A lease has at most one extension in flight: Extend waits until the
// watchdog's renewal in flight is answered, and the watchdog leaves out a
// lease whose Extend is in flight. The lock service therefore applies the
// extensions in the order they were sent, and the last one sent is the one
// it enforces; the deadline is computed from that one's send time and ttl,
// never later than the service's expiry.
//
// A Lease is safe for concurrent use.
type Lease struct {
	c         *Client
	name      string
	owner     string
	token     uint64
	autoRenew bool
	kind      engine.Kind // the lock's kind (a shared lock's, engine.Sharer: a permit or a reader's or writer's lease)
	reentered bool        // the grant was a re-entry: the owner held the lock already
	oneOff    bool        // the owner is a random one of the Client's: it holds nothing else and never re-enters
	granted   time.Time   // when the grant was sent
	holdEnd   time.Time   // WithMaxHold's end (zero: none); the deadline never passes it
	done      chan struct{}
	parent    context.Context // the acquiring context, for Context's values
	obs       *observation    // the EventObserver's view of the hold (nil: none)

	mu        sync.Mutex
	ttl       time.Duration
	deadline  time.Time                 // local validity deadline
	lastSent  time.Time                 // send time of the last confirmed acquire/extend
	renewal   schedule                  // when the watchdog renews it
	timer     *time.Timer               // fires at deadline
	lastErr   error                     // last renewal error since the last confirmation
	inflight  bool                      // a renewal sent before the deadline is not answered yet
	extending chan struct{}             // non-nil while an extension is in flight; closed when answered
	err       error                     // nil while held
	ctx       context.Context           // nil until Context is first called
	cancels   []context.CancelCauseFunc // of the contexts bound to the lease (bind)
	dropped   bool                      // no release is to be sent: its end released the hold (WithMaxHold), or a newer grant holds it (superseded)
	// untold: the lease ended as released (halt) and the Observer is
	// told how once its release is answered (tell); endedAs is what it
	// was told (0: released), for an EventObserver's observation that
	// arrives after (observation.end).
	untold  bool
	endedAs LossCause
	// unrenewed: the watchdog leaves the lease (a member of a lost set,
	// LeaseSet.end); an atomic, set without l.mu, which its setter may
	// hold for another member.
	unrenewed atomic.Bool
}

// newLease returns the lease of a grant sent at sent whose validity counts
// from valid (sent, or earlier: engine.Grant.Age).
func newLease(c *Client, ctx context.Context, name, owner string, token uint64, o options, sent, valid time.Time) *Lease {
	l := &Lease{
		c: c, name: name, owner: owner, token: token, autoRenew: o.autoRenew, kind: o.kind,
		oneOff: o.owner == "", granted: sent,
		done: make(chan struct{}),
		ttl:  o.ttl,
	}
	l.parent = ctx
	if o.maxHoldSet {
		l.holdEnd = sent.Add(o.maxHold)
	}
	l.setValidity(valid, o.ttl)
	return l
}

// start arms the deadline timer and hands the lease to the watchdog.
func (l *Lease) start() {
	l.mu.Lock()
	l.timer = time.AfterFunc(time.Until(l.deadline), l.checkDeadline)
	l.mu.Unlock()
	if l.autoRenew {
		l.c.renew.add(l)
	}
}

// Name returns the lock's name.
func (l *Lease) Name() string { return l.name }

// Owner returns the owner token. With it, Client.Attach rebuilds the lease
// in another goroutine or process, to extend or release it.
func (l *Lease) Owner() string { return l.owner }

// Token returns the fencing token of the grant. Tokens of one lock name
// strictly increase from grant to grant; re-entry keeps the token. Send it
// with every write to the protected resource, and have the resource reject
// tokens lower than the highest it has seen (package fence).
func (l *Lease) Token() uint64 { return l.token }

// TTL returns the lease's current time to live.
func (l *Lease) TTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl
}

// Deadline returns the local validity deadline (monotonic clock), never
// later than HoldLimit when the lease has one (WithMaxHold).
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Done returns a channel that is closed when the lease ends: lost or
// released. Err says which. A call made after the deadline closes the
// channel before it returns it, so a fresh `select { case <-l.Done(): ...
// default: }` sees the loss; a channel kept from a call made before the
// deadline is closed by the deadline timer, a moment after the deadline.
func (l *Lease) Done() <-chan struct{} {
	l.current()
	return l.done
}

// Err returns nil while the lease is held, ErrReleased after Release, and a
// *LostError (matching ErrLeaseLost) after a loss. It compares the clock
// with the deadline itself: after the deadline it never returns nil.
func (l *Lease) Err() error { return l.current() }

// Context returns a context that is cancelled when the lease ends. Its cause
// (context.Cause) is Err. It carries the values of the context that
// acquired the lease, not its cancellation. Its Err, Done and Value methods
// check the deadline as Err does, so its Err and context.Cause report the
// loss as soon as the deadline has passed; contexts derived from it after
// the deadline start cancelled. It has no Deadline: renewals move the
// lease's deadline, and a context's deadline may not change.
func (l *Lease) Context() context.Context {
	l.mu.Lock()
	ctx := l.ctx
	l.mu.Unlock()
	if ctx != nil {
		return ctx
	}
	// Made on first use: most holders never ask.
	ctx, _ = l.bind(context.WithoutCancel(l.parent))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx = ctx
	}
	return l.ctx
}

// current returns Err's answer, ending the lease first when its deadline
// has passed (whether or not the deadline timer has run).
func (l *Lease) current() error {
	l.mu.Lock()
	ended := l.expireLocked(time.Now())
	err := l.err
	l.mu.Unlock()
	if ended {
		l.c.forget(l)
	}
	return err
}

// Extend sets the lease's time to live to ttl, counted from now, and makes it
// the ttl of later automatic renewals. It fails with ErrNotHeld (and the
// lease is lost) if the lock expired or was taken, and with ErrBackend (the
// lease stays as it was, but for its deadline: no later than ttl's from the
// send time, as the extension may have been applied and its answer lost)
// if the lock service failed. It first waits for an
// extension of the lease in flight (the watchdog's renewal, another Extend)
// to be answered; when ctx ends meanwhile it returns ctx's error (wrapped)
// and sends nothing.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if ctx == nil {
		return &ArgumentError{Arg: "context", Reason: "nil"}
	}
	o := options{ttl: ttl}
	if err := l.c.checkOptions(&o); err != nil {
		return err
	}
	ttl = o.ttl
	if err := l.claim(ctx); err != nil {
		return err
	}
	defer l.settleExtend()
	if err := l.heldErr(); err != nil {
		return err
	}
	sent, sentTTL := time.Now(), l.c.coverTTL(l, ttl)
	res, err := l.c.extendOne(ctx, l.extendRequest(sentTTL))
	if err != nil {
		l.extendFailed(sent, sentTTL, err)
		return l.c.backendErr(ctx, "extend", l.name, err)
	}
	l.answer(res, sent, ttl, nil)
	return l.heldErr()
}

// extendFailed records an extension to ttl, sent at sent, that failed: its
// outcome is unknown, for the lock service may have applied it and its
// answer been lost. Applied, a ttl shorter than the lease's time left ends
// the lock at sent + ttl on the service, so the deadline is brought forward
// to what that extension's confirmation would have set, and the watchdog
// tries again soon, as after a failed renewal: its confirmation restores
// the lease's own ttl. Were the deadline kept, another client could be
// granted the lock while the lease read held.
func (l *Lease) extendFailed(sent time.Time, ttl time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.lastErr = err
	l.renewal = retryAfter(min(l.ttl, ttl))
	if end := l.capHold(sent.Add(ttl - drift(ttl))); end.Before(l.deadline) {
		l.deadline = end
		l.timer.Reset(max(time.Until(end), 0))
	}
}

// claim waits until no other extension of the lease (the watchdog's
// renewal, another Extend) is in flight, and marks Extend's own as in
// flight; settle ends it. Were two in flight at once, the lock service
// could apply the one sent first last, and keep its ttl, while the
// deadline is computed from the one sent last. It gives up when ctx ends
// (its error) or the lease ends (heldErr's).
func (l *Lease) claim(ctx context.Context) error {
	for {
		l.mu.Lock()
		busy := l.extending
		if busy == nil {
			l.extending = make(chan struct{})
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		select {
		case <-busy:
		case <-l.done:
			return l.heldErr()
		case <-ctx.Done():
			return l.c.backendErr(ctx, "extend", l.name, ctx.Err())
		}
	}
}

// settle marks the extension in flight as answered, after its answer was
// taken: the next one may be sent.
func (l *Lease) settle() {
	l.mu.Lock()
	if l.extending != nil {
		close(l.extending)
		l.extending = nil
	}
	l.mu.Unlock()
}

// settleExtend settles the user's Extend, and wakes the watchdog to
// schedule the lease's renewals again: it left the lease out meanwhile.
func (l *Lease) settleExtend() {
	l.settle()
	if l.autoRenew {
		l.c.renew.wake()
	}
}

// Release drops the lease. The lock is freed when this was its last hold
// (see WithOwner for re-entry) and one waiter is woken. Release is
// idempotent: later calls return ErrReleased and send nothing. Its network
// work never inherits ctx's cancellation (only its values), and is bounded by
// the client's release timeout (through a distlock server that does not
// answer, plus the remote engine's one-second settle grace).
//
// An extension of the lease in flight (the watchdog's renewal) is answered
// before the release is sent, so that it cannot land after it and set the
// ttl of the owner's other holds of the lock (re-entry).
//
// A backend error that may pass (a failover's refused connections) is
// tried again within the release timeout, where a copy cannot drop a
// second hold: on engines whose releases apply once (engine.OnceReleaser:
// every engine of this module, and a server whose engine is one), and on every engine for a lease of the
// Client's random owner (no WithOwner), which holds the lock once; a
// later copy that finds the lock free while the lease was still valid
// reports the earlier copy's release. After a backend error the
// lease is dropped all the same; the lock then stays held on the server
// until its ttl runs out. A lease that was no
// longer held returns an error matching ErrNotHeld; when a force-release
// freed it before a renewal could tell, that error also holds a
// *LostError with Cause TakenOver (errors.As), as its renewal would have.
func (l *Lease) Release(ctx context.Context) error {
	if ctx == nil {
		return &ArgumentError{Arg: "context", Reason: "nil"}
	}
	prev, done := l.halt()
	if done != nil {
		return done
	}
	rctx, cancel := l.c.releaseContext(ctx)
	defer cancel()
	l.awaitExtension(rctx)
	res, err := l.c.release(rctx, l, l.releaseRequest())
	return l.released(res, err, prev)
}

// awaitExtension waits, bounded by ctx, until no extension of the lease
// (the watchdog's renewal, an Extend) is in flight. Applied after the
// release, a renewal of this hold would set the ttl of the owner's other
// holds of the lock (re-entry): once this one is gone, the lock service
// takes it as the lone hold's, and a shorter ttl would cut the lock short
// under a lease that still reads valid.
//
// It waits no longer than the lease's deadline: an extension unanswered by
// then may still be applied later, and is asked for enough ttl not to cut
// the other holds short (coverTTL); the release keeps the rest of ctx.
func (l *Lease) awaitExtension(ctx context.Context) {
	l.mu.Lock()
	busy, deadline := l.extending, l.deadline
	l.mu.Unlock()
	if busy == nil {
		return
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case <-busy:
	case <-wait.C:
	case <-ctx.Done():
	}
}

// stop ends the lease as released, locally, with no release to be sent
// (ReleaseAfter: the lock expires by itself), and tells the Observer so
// at once. It returns halt's answers.
func (l *Lease) stop() (prev, done error) {
	prev, done = l.halt()
	if prev == nil && done == nil {
		l.tell(0)
	}
	return prev, done
}

// halt ends the lease as released, locally, before its release is sent:
// it returns why it had ended before (nil while it was held), and done,
// Release's answer, when nothing is to be sent: ErrReleased when it was
// released already, or an error matching ErrNotHeld when its end released
// the hold (WithMaxHold). A lease held until then (prev nil) is not told
// to the Observer yet: its caller tells it how the release was answered
// (released, tell), so that a release answered "not held" is observed as
// the loss it reports, not as a release.
func (l *Lease) halt() (prev, done error) {
	l.mu.Lock()
	l.expireLocked(time.Now()) // a lease past its deadline was lost before it was released
	prev = l.err
	if prev == ErrReleased {
		l.mu.Unlock()
		return nil, ErrReleased
	}
	l.endLocked(ErrReleased, false)
	dropped := l.dropped
	l.mu.Unlock()
	l.c.forget(l)
	if dropped {
		// Its end (WithMaxHold) released the hold already, or a newer
		// grant of its owner holds the lock (superseded): a release would
		// drop another hold of the owner.
		return prev, fmt.Errorf("%w: %w", ErrNotHeld, prev)
	}
	return prev, nil
}

// tell tells the Observer (and the EventObserver) how a lease that halt
// ended while it was held came to its end: released (cause 0) or lost
// with cause. It tells once.
func (l *Lease) tell(cause LossCause) {
	l.mu.Lock()
	if !l.untold {
		l.mu.Unlock()
		return
	}
	l.untold, l.endedAs = false, cause
	ob := l.obs
	l.mu.Unlock()
	held := time.Since(l.granted)
	if cause != 0 {
		l.c.obs.Lost(l.name, cause, held)
	} else {
		l.c.obs.Released(l.name, held)
	}
	ob.ended(cause, held)
}

// released is Release's error for the engine's answer res (or failure
// err) to the release of a lease that had ended with prev before (halt);
// a lease held until then is told to the Observer as the answer says:
// released (or dropped all the same after a backend error), or lost,
// taken over (NotOwner) or expired (not held).
func (l *Lease) released(res engine.ReleaseResult, err error, prev error) error {
	if err != nil {
		if prev == nil {
			l.tell(0)
		}
		return &BackendError{Op: "release", Name: l.name, Node: l.c.node, Err: err}
	}
	if prev != nil {
		// The lease had ended before (lost): its cause, even where the
		// backend still kept the hold it dropped now (a ZooKeeper
		// holder's node past its expiry, not yet swept).
		return fmt.Errorf("%w: %w", ErrNotHeld, prev)
	}
	if res.Status == engine.Released {
		l.tell(0)
		return nil
	}
	if res.Status == engine.NotOwner {
		// Freed by a force-release (or superseded) before its renewal
		// could tell: the loss, typed as a renewal would have reported it.
		l.tell(TakenOver)
		return fmt.Errorf("%w: %w", ErrNotHeld, &LostError{Name: l.name, Cause: TakenOver, At: time.Now()})
	}
	l.tell(Expired)
	return fmt.Errorf("%w: %q expired before release", ErrNotHeld, l.name)
}

// heldErr returns nil while the lease is held, or why it is not.
func (l *Lease) heldErr() error {
	switch err := l.current(); {
	case err == nil:
		return nil
	case err == ErrReleased:
		return ErrReleased
	default:
		return fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
}

// sending marks a watchdog renewal as in flight and returns its request,
// with the lease's current ttl; ok is false, and nothing is marked, when an
// Extend is in flight: the watchdog leaves the lease out of its batch. A
// renewal sent after the deadline (by a watchdog that ran late) cannot save
// the lease, and is not counted as unanswered at the deadline.
func (l *Lease) sending() (req engine.ExtendRequest, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.extending != nil || l.err != nil {
		// In flight already, or ended since the watchdog collected it
		// (released: its release must not overtake a renewal).
		return req, false
	}
	l.extending = make(chan struct{})
	l.inflight = time.Now().Before(l.deadline)
	return l.requestLocked(), true
}

// apply takes the answer to the watchdog's renewal sent at sent, and ends
// its time in flight.
func (l *Lease) apply(r engine.ExtendResult, sent time.Time, ttl time.Duration, batchErr error) {
	defer l.settle()
	l.answer(r, sent, ttl, batchErr)
}

// answer takes the answer to an extension sent at sent.
func (l *Lease) answer(r engine.ExtendResult, sent time.Time, ttl time.Duration, batchErr error) {
	l.mu.Lock()
	l.inflight = false
	l.mu.Unlock()
	ok := batchErr == nil && r.Err == nil && r.Status == engine.Extended
	l.c.obs.Renewed(l.name, ok)
	l.observed().renewed(renewalErr(ok, firstErr(batchErr, r.Err), r.Status))
	switch {
	case batchErr != nil || r.Err != nil:
		l.renewFailed(firstErr(batchErr, r.Err))
	case ok && l.token != 0 && r.Token > l.token:
		l.superseded()
	case ok:
		l.confirm(sent, ttl)
	case r.Status == engine.HeldByOther:
		l.lose(TakenOver, nil)
	default:
		l.lose(Expired, nil)
	}
}

// superseded ends the lease as taken over when a renewal finds the lock
// held by its owner under a newer grant (a higher token): a force-release
// freed this lease's grant and the owner was granted the lock again (the
// same WithOwner used by another call or Client). That grant is not this
// lease's: the lease is told TakenOver, and its Release sends nothing, for
// a release by the owner would drop the newer grant's hold.
func (l *Lease) superseded() {
	l.mu.Lock()
	if l.err == nil {
		l.dropped = true
	}
	l.mu.Unlock()
	l.lose(TakenOver, nil)
}

// confirm records a confirmed extension sent at sent. A confirmation that
// arrives after the deadline comes too late: the lease lapsed in between
// (a holder may have been told so), and it ends instead.
func (l *Lease) confirm(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	if l.expireLocked(time.Now()) {
		l.mu.Unlock()
		l.c.forget(l)
		return
	}
	defer l.mu.Unlock()
	if l.err != nil || sent.Before(l.lastSent) {
		// Ended, or one sent later was confirmed already. Extensions
		// are never in flight together, so one sent at the same clock
		// reading (a coarse clock) was sent after it: it counts.
		return
	}
	l.ttl = ttl
	l.lastErr = nil
	l.setValidity(sent, ttl)
	// A shorter ttl can put the new deadline in the past already: the
	// timer then fires at once.
	l.timer.Reset(max(time.Until(l.deadline), 0))
}

// setValidity computes the deadline and next renewal of a grant or
// extension sent at sent; l.mu is held (or l is new).
func (l *Lease) setValidity(sent time.Time, ttl time.Duration) {
	l.lastSent = sent
	l.deadline = l.capHold(sent.Add(ttl - drift(ttl)))
	l.renewal = renewAfter(sent, ttl)
}

// renewFailed schedules a jittered retry after a failed renewal.
func (l *Lease) renewFailed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastErr = err
	l.renewal = retryAfter(l.ttl)
}

// checkDeadline ends the lease when its deadline has passed. The deadline
// timer runs it; every check of the lease does the same (current).
func (l *Lease) checkDeadline() { l.current() }

// expireLocked ends the lease as lost when its deadline has passed by now,
// with the cause the deadline gives: Expired, or Unreachable when renewals
// failed or one was still unanswered. It reports whether it ended the lease;
// the caller then calls l.c.forget(l) once l.mu is released. l.mu is held.
func (l *Lease) expireLocked(now time.Time) bool {
	if l.err != nil || now.Before(l.deadline) {
		return false // ended, or still valid (renewed just now, perhaps)
	}
	if l.endHoldLocked(now) {
		return true
	}
	cause, err := Expired, l.lastErr
	if l.inflight && err == nil {
		err = errNoAnswer
	}
	if err != nil {
		cause = Unreachable
	}
	l.end(&LostError{Name: l.name, Cause: cause, At: now, Err: err})
	return true
}

// lose ends the lease on the lock service's word.
func (l *Lease) lose(cause LossCause, err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.end(&LostError{Name: l.name, Cause: cause, At: time.Now(), Err: err})
	l.mu.Unlock()
	l.c.forget(l)
}

// end records why the lease ended and tells its holder; l.mu is held.
func (l *Lease) end(why error) { l.endLocked(why, true) }

// endLocked is end; with tell false the Observer is not told yet (halt:
// tell tells it, once the release is answered). l.mu is held.
func (l *Lease) endLocked(why error, tell bool) {
	if l.err != nil {
		// Lost before: a later Release only marks it released.
		l.err = why
		return
	}
	l.err = why
	if l.timer != nil {
		l.timer.Stop()
	}
	// The Observer hears of it before the holder does, so that metrics
	// are up to date by the time Done is closed; a release's end is
	// heard when the release is answered (after Done is closed).
	if !tell {
		l.untold = true
	} else if lost, ok := why.(*LostError); ok {
		l.c.obs.Lost(l.name, lost.Cause, time.Since(l.granted))
		l.obs.ended(lost.Cause, time.Since(l.granted))
	} else {
		l.c.obs.Released(l.name, time.Since(l.granted))
		l.obs.ended(0, time.Since(l.granted))
	}
	close(l.done)
	for _, cancel := range l.cancels {
		cancel(why)
	}
	l.cancels = nil
}

// renewDue reports whether the watchdog should renew the lease at now (a
// renewal less than half an interval away is done along with the ones due,
// so that leases share round trips), and when it is due at the latest.
// While an extension is in flight it is not due, with no time: its answer
// schedules the next renewal.
func (l *Lease) renewDue(now time.Time) (bool, time.Time) {
	if l.unrenewed.Load() {
		return false, time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.extending != nil {
		return false, time.Time{}
	}
	return l.renewal.due(now)
}

// releaseRequest is the release of the lease's hold: its grant's, by
// token, so that it drops no newer grant of the same owner.
func (l *Lease) releaseRequest() engine.ReleaseRequest {
	return engine.ReleaseRequest{Name: l.name, Owner: l.owner, Kind: l.kind, Token: l.token}
}

// extendRequest is the extension of the lease's hold to ttl: its grant's,
// by token, so that it renews no newer grant of the same owner.
func (l *Lease) extendRequest(ttl time.Duration) engine.ExtendRequest {
	return engine.ExtendRequest{Name: l.name, Owner: l.owner, TTL: ttl, Kind: l.kind, Token: l.token}
}

// requestLocked is the lease's renewal request; l.mu is held.
func (l *Lease) requestLocked() engine.ExtendRequest { return l.extendRequest(l.ttl) }

// errNoAnswer: a renewal was still waiting for its answer at the deadline.
var errNoAnswer = errors.New("renewal not answered before the lease's deadline")

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
