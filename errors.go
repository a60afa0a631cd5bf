package distlock

import (
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock/engine"
)

// The error vocabulary. Every error distlock returns matches at most one of
// ErrLocked, ErrNotHeld, ErrBackend and ErrInvalidArgument with errors.Is,
// plus ErrLeaseLost for a lost lease and context.Canceled or
// context.DeadlineExceeded when a context ended the call. Contention
// (ErrLocked) and failure of the lock service (ErrBackend) are never the same
// error.
var (
	// ErrLocked: another owner holds the lock. See *LockedError.
	ErrLocked = errors.New("distlock: locked by another owner")
	// ErrNotHeld: the lease is not held (any more): it expired, another
	// owner took the lock, or it was released.
	ErrNotHeld = errors.New("distlock: lock not held")
	// ErrLeaseLost: ownership of a lease can no longer be proven. See
	// *LostError for the cause.
	ErrLeaseLost = errors.New("distlock: lease lost")
	// ErrBackend: the lock service failed or could not be reached. See
	// *BackendError.
	ErrBackend = errors.New("distlock: backend error")
	// ErrInvalidArgument: a call was made with bad input and changed
	// nothing. See *ArgumentError.
	ErrInvalidArgument = errors.New("distlock: invalid argument")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("distlock: client closed")
)

// ErrReleased is returned for a lease that its holder released: by Err, and
// by Extend and Release after Release. It matches ErrNotHeld.
var ErrReleased = fmt.Errorf("%w: lease released", ErrNotHeld)

// NotHolderError reports that a force-release of one holder
// (Client.ForceReleaseHolder) found Owner holding nothing of the lock
// Name: nothing was changed. It matches ErrNotHeld.
type NotHolderError struct {
	Name, Owner string
}

func (e *NotHolderError) Error() string {
	return fmt.Sprintf("distlock: %q holds nothing of %q: nothing was released", e.Owner, e.Name)
}

// Is matches ErrNotHeld.
func (e *NotHolderError) Is(target error) bool { return target == ErrNotHeld }

// LockedError reports that another owner holds the lock, or that the lock
// is free but kept for waiters queued before (Queued); for a semaphore or
// a reader-writer lock (Kind), that the permits asked for are not free, or
// that waiters queued before get them first (Queued).
type LockedError struct {
	Name string
	// TTL is the time the holder's lease has left when it was asked
	// (negative when the lock has no expiry); in a WaitError's Last, the
	// last answer's time left less the time since it was asked, as of the
	// wait's end (that answer's holder may have released since); with
	// Queued, the time left of
	// the reservation for the head of the queue. For a shared lock, the
	// soonest holder's time left: when permits may come back without a
	// release.
	TTL time.Duration
	// Queued: the lock is free, but kept for the waiters queued for it (a
	// fair waiter heads the queue, or a release reserved it for the head).
	// For a shared lock: the permits asked for would fit, but waiters
	// queued before come first (first come, first served), whoever holds
	// the rest.
	Queued bool
	// Kind is the kind of the shared lock asked for (engine.Semaphore,
	// engine.RWLock); 0 for a mutex. Weight is the permits asked for (an
	// RW lock's reader 1, its writer engine.RWPermits).
	Kind   engine.Kind
	Weight int
}

func (e *LockedError) Error() string { return "distlock: " + e.State() }

// State says what the lock's state refused, without the "distlock: "
// prefix of Error: for messages of tools (the CLI) that show it.
func (e *LockedError) State() string {
	ttl := e.TTL.Round(time.Millisecond)
	switch {
	case e.Kind != 0 && e.Queued:
		return fmt.Sprintf("%q is kept for the waiters queued first (first come, first served; for %v at least)", e.Name, ttl)
	case e.Kind == engine.RWLock && e.Weight < engine.RWPermits:
		return fmt.Sprintf("%q is write-locked (the writer's lease ends in %v)", e.Name, ttl)
	case e.Kind == engine.RWLock:
		return fmt.Sprintf("%q is read- or write-locked by others (the soonest lease ends in %v)", e.Name, ttl)
	case e.Kind == engine.Semaphore && e.Weight <= 1:
		return fmt.Sprintf("%q has no free permit (the soonest lease ends in %v)", e.Name, ttl)
	case e.Kind == engine.Semaphore:
		return fmt.Sprintf("%q has fewer than %d free permits (the soonest lease ends in %v)", e.Name, e.Weight, ttl)
	case e.Queued:
		return fmt.Sprintf("%q is free but kept for the waiters queued for it (for %v at least)", e.Name, ttl)
	}
	return fmt.Sprintf("%q is locked by another owner (lease ends in %v)", e.Name, ttl)
}

// Is matches ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// LossCause says why a lease was lost.
type LossCause int

const (
	// Expired: the lease's local validity deadline passed without a
	// confirmed renewal (renewal off, or renewals answered too late), or
	// the lock service reported the lock gone.
	Expired LossCause = iota + 1
	// TakenOver: the lock service reports another owner holding the lock,
	// or the lease's hold freed by a force-release (whose mark answers
	// the lease's renewals so until its ttl would have run out).
	TakenOver
	// Unreachable: renewals failed with backend errors until the local
	// validity deadline passed.
	Unreachable
	// MaxHoldExceeded: the lease was held for its maximum hold time
	// (WithMaxHold); the Client released it. Its *LostError matches
	// ErrMaxHoldExceeded.
	MaxHoldExceeded
)

func (c LossCause) String() string {
	switch c {
	case Expired:
		return "expired"
	case TakenOver:
		return "taken over by another owner"
	case Unreachable:
		return "backend unreachable"
	case MaxHoldExceeded:
		return "held for its maximum hold time"
	}
	return "unknown"
}

// LostError reports that a lease was lost. It matches ErrLeaseLost and,
// where the cause had one, wraps the last backend error.
type LostError struct {
	Name  string
	Cause LossCause
	// At is when the loss was signalled.
	At time.Time
	// Err is the last renewal error, for Unreachable.
	Err error
}

func (e *LostError) Error() string {
	s := fmt.Sprintf("distlock: lease on %q lost: %v", e.Name, e.Cause)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches ErrLeaseLost, and ErrMaxHoldExceeded for the cause
// MaxHoldExceeded.
func (e *LostError) Is(target error) bool {
	return target == ErrLeaseLost || target == ErrMaxHoldExceeded && e.Cause == MaxHoldExceeded
}

// Unwrap returns the last renewal error, if any.
func (e *LostError) Unwrap() error { return e.Err }

// BackendError reports that the lock service failed during Op.
type BackendError struct {
	Op   string // "acquire", "extend", "release", "inspect", "subscribe", ...
	Name string
	// Node names the lock authority that failed, when known.
	Node string
	Err  error
	// Failing, for a wait that gave up on a failing backend before its
	// context ended, is how long its attempts had kept failing (the
	// Client's backend failure budget, or a little more); zero otherwise.
	Failing time.Duration
}

func (e *BackendError) Error() string {
	s := "distlock: " + e.Op
	if e.Name != "" {
		s += fmt.Sprintf(" %q", e.Name)
	}
	if e.Node != "" {
		s += " on " + e.Node
	}
	s += ": backend error: " + e.Err.Error()
	if e.Failing > 0 {
		s += fmt.Sprintf(" (attempts failed for %v: gave up waiting)", e.Failing.Round(time.Millisecond))
	}
	return s
}

// Is matches ErrBackend.
func (e *BackendError) Is(target error) bool { return target == ErrBackend }

// Unwrap returns the underlying error.
func (e *BackendError) Unwrap() error { return e.Err }

// UnsupportedError reports that the engine cannot do what a call asked
// (WithFair on an engine without a waiter queue). It matches
// ErrInvalidArgument and errors.ErrUnsupported; the call changed nothing.
type UnsupportedError struct {
	Feature string
	Engine  string
	Reason  string
	// Err is the engine's refusal when it gave one (Reason is its text):
	// errors.Is and errors.As reach it (quorum.ErrSemaphoreLimit).
	Err error
}

func (e *UnsupportedError) Error() string {
	on := ""
	if e.Engine != "" {
		on = " on " + e.Engine
	}
	return fmt.Sprintf("distlock: %s is not supported%s: %s", e.Feature, on, e.Reason)
}

// Is matches ErrInvalidArgument and errors.ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool {
	return target == ErrInvalidArgument || target == errors.ErrUnsupported
}

// Unwrap returns the engine's refusal (Err), or nil.
func (e *UnsupportedError) Unwrap() error { return e.Err }

// ArgumentError reports bad input. The call that returned it changed nothing.
type ArgumentError struct {
	Arg    string
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("distlock: invalid %s: %s", e.Arg, e.Reason)
}

// Is matches ErrInvalidArgument.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// ErrUpgrade is returned when the owner of a read lease of an RWMutex asks
// for the write side (with WithOwner): refused by design, since two
// readers upgrading at once would wait for each other forever. Release the
// read lease, then Lock. It matches ErrInvalidArgument too.
var ErrUpgrade = fmt.Errorf("%w: read-to-write upgrade refused; release the read lease, then Lock", ErrInvalidArgument)

// isArgument reports whether an engine refused its input
// (*engine.ArgumentError), which no retry can mend.
func isArgument(err error) bool {
	var ae *engine.ArgumentError
	return errors.As(err, &ae)
}

// argumentFrom turns an engine's refusal of its input into an
// *ArgumentError.
func argumentFrom(err error) error {
	var ae *engine.ArgumentError
	if errors.As(err, &ae) {
		return &ArgumentError{Arg: ae.Arg, Reason: ae.Reason}
	}
	return &ArgumentError{Arg: "name", Reason: err.Error()}
}

// WaitError reports that Acquire stopped waiting because its context ended,
// or because the Client was closed. It wraps the context's error
// (context.Canceled or DeadlineExceeded), or ErrClosed, and the outcome of
// the last attempt (a *LockedError or a *BackendError), so both
// errors.Is(err, context.DeadlineExceeded) and errors.Is(err, ErrLocked) can
// hold.
type WaitError struct {
	Name string
	// Waited is how long Acquire waited.
	Waited time.Duration
	// Ctx is the context's error, or ErrClosed when Close ended the wait.
	Ctx  error
	Last error
}

func (e *WaitError) Error() string {
	s := fmt.Sprintf("distlock: gave up waiting for %q after %v: %v", e.Name, e.Waited.Round(time.Millisecond), e.Ctx)
	if e.Last != nil {
		s += " (last attempt: " + e.Last.Error() + ")"
	}
	return s
}

// Unwrap returns the context's error and the last attempt's error.
func (e *WaitError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Ctx}
	}
	return []error{e.Ctx, e.Last}
}
