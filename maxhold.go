package distlock

import (
	"fmt"
	"time"
)

// ErrMaxHoldExceeded is what the Err of a lease ended by WithMaxHold
// matches (a *LostError with the cause MaxHoldExceeded). It matches
// ErrLeaseLost too.
var ErrMaxHoldExceeded = fmt.Errorf("%w: held for its maximum hold time", ErrLeaseLost)

// WithMaxHold bounds how long the lease may be held, renewals or not: d
// after the grant was sent, the lease ends as lost with the cause
// MaxHoldExceeded (Done is closed, Context is cancelled, Err matches
// ErrMaxHoldExceeded and ErrLeaseLost, and the Observer's Lost hears of
// it), and the Client releases the hold in the lock authority in the
// background, bounded by the release timeout, so that others proceed. If
// that release fails, the hold runs out with its ttl (at most one ttl
// after the end). A later Release of the lease sends nothing and returns
// an error matching ErrNotHeld. The loss comes no later than the end, on
// the local clock (as every loss does), before the lock can be granted to
// anyone else; the fencing token guards work the holder has not stopped.
//
// It applies to every lease: Acquire's and TryAcquire's, a Semaphore's
// permits and an RWMutex's sides (only that lease's permits come back),
// Do (its function's context is cancelled), Attach (counted from the
// Attach), and Campaign, where it is a term limit: the leader steps down d
// after it was elected, and the next campaigner in the queue is elected
// with a greater term (the same process too, if it campaigns again). With
// re-entry (WithOwner) each lease keeps its own limit, counted from its
// own grant, and its end drops its own hold only: the lock is free when
// every hold of the owner ended. Extend never moves the lease's end past
// the limit.
//
// d must be at least MinTTL; anything else makes the call fail with an
// *ArgumentError that changes nothing.
func WithMaxHold(d time.Duration) Option {
	return func(o *options) { o.maxHold, o.maxHoldSet = d, true }
}

// validateMaxHold checks WithMaxHold's value, when it was given.
func (o *options) validateMaxHold() error {
	if o.maxHoldSet && o.maxHold < MinTTL {
		return &ArgumentError{Arg: "max hold", Reason: fmt.Sprintf("%v is shorter than the minimum of %v", o.maxHold, MinTTL)}
	}
	return nil
}

// HoldLimit returns when the lease ends by WithMaxHold (the grant's send
// time plus the maximum hold time), or the zero time when it has no
// maximum hold time.
func (l *Lease) HoldLimit() time.Time { return l.holdEnd }

// capHold caps a validity deadline at the lease's hold limit; l.mu is
// held (or l is new).
func (l *Lease) capHold(deadline time.Time) time.Time {
	if !l.holdEnd.IsZero() && l.holdEnd.Before(deadline) {
		return l.holdEnd
	}
	return deadline
}

// endHoldLocked ends the lease when its hold limit has passed by now, and
// releases the hold in the lock authority in the background; it reports
// whether it did. The caller then calls l.c.forget(l) once l.mu is
// released. l.mu is held and the lease is not ended.
func (l *Lease) endHoldLocked(now time.Time) bool {
	if l.holdEnd.IsZero() || now.Before(l.holdEnd) {
		return false
	}
	l.end(&LostError{Name: l.name, Cause: MaxHoldExceeded, At: now})
	// Under l.mu: a Close releasing this lease waits for l.mu, so the
	// clean-up is counted (c.bg) before Close waits for the clean-ups.
	l.dropped = true
	l.c.cleanup(l.releaseRequest(), l.ttl)
	return true
}
