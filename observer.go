package distlock

import (
	"context"
	"errors"
	"time"
)

// Observer receives the events of a Client's locks: the hook for metrics
// (see the server's Prometheus collector) and logs. Its methods are called
// synchronously on the lock path, so they must be fast, must not block, and
// must be safe for concurrent use.
type Observer interface {
	// Acquired: a lease was granted after waiting waited; contended
	// reports whether the lock was held by another owner when asked.
	Acquired(name string, waited time.Duration, contended bool)
	// AcquireFailed: Acquire or TryAcquire gave up (err says why: locked,
	// context, backend).
	AcquireFailed(name string, waited time.Duration, err error)
	// Waiting: a goroutine started (+1) or stopped (-1) waiting for name.
	Waiting(name string, delta int)
	// Renewed: the watchdog renewed a lease (ok) or a renewal failed.
	Renewed(name string, ok bool)
	// Released: a lease was released after being held for held.
	Released(name string, held time.Duration)
	// Lost: a lease was lost after being held for held.
	Lost(name string, cause LossCause, held time.Duration)
}

// WithObserver sets the Client's Observer (default none).
func WithObserver(o Observer) ClientOption { return func(c *Client) { c.obs = o } }

// nopObserver is the Observer of a Client without one.
type nopObserver struct{}

func (nopObserver) Acquired(string, time.Duration, bool)       {}
func (nopObserver) AcquireFailed(string, time.Duration, error) {}
func (nopObserver) Waiting(string, int)                        {}
func (nopObserver) Renewed(string, bool)                       {}
func (nopObserver) Released(string, time.Duration)             {}
func (nopObserver) Lost(string, LossCause, time.Duration)      {}

// FailureReason labels why an acquire gave up, as the server's metrics
// and the OpenTelemetry adapter's label it: the Client or server closing
// (closed); its wait's deadline (timeout) or cancellation (canceled); the
// request refused by the engine, which no retry mends and which is the
// caller's mistake, not the backend's (refused: another kind, limit or
// weight than the name's, a read-to-write upgrade, a feature the engine
// lacks); the lock held by another owner (locked); the lock service
// failing (backend); else other. The first that err matches wins, in that
// order: a wait's *WaitError matches why it ended (ErrClosed, the
// context's error) and its last attempt's outcome (a *LockedError, say),
// and is labelled by why it ended.
func FailureReason(err error) string {
	switch {
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrInvalidArgument):
		return "refused"
	case errors.Is(err, ErrLocked):
		return "locked"
	case errors.Is(err, ErrBackend):
		return "backend"
	}
	return "other"
}

// Label is the cause as metrics label it: expired, taken_over,
// unreachable, or other.
func (c LossCause) Label() string {
	switch c {
	case Expired:
		return "expired"
	case TakenOver:
		return "taken_over"
	case Unreachable:
		return "unreachable"
	case MaxHoldExceeded:
		return "max_hold"
	}
	return "other"
}
