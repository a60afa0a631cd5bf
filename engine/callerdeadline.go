package engine

import (
	"context"
	"time"
)

// callerDeadlineKey is the context key of WithCallerDeadline.
type callerDeadlineKey struct{}

// WithCallerDeadline returns ctx carrying d, the deadline the caller of a
// request gave, for a context whose own deadline is later: the distlock
// Client keeps a request that may grant on the wire past its caller's
// deadline (by its release timeout), only to learn and undo a grant
// answered after the caller left. An engine that shares the caller's time
// among servers (engine/remote) reads it with CallerDeadline.
func WithCallerDeadline(ctx context.Context, d time.Time) context.Context {
	return context.WithValue(ctx, callerDeadlineKey{}, d)
}

// CallerDeadline returns the deadline of the call ctx serves: the earlier
// of ctx's deadline and the caller's deadline ctx carries
// (WithCallerDeadline); ok is false when there is neither.
func CallerDeadline(ctx context.Context) (d time.Time, ok bool) {
	d, ok = ctx.Deadline()
	if c, given := ctx.Value(callerDeadlineKey{}).(time.Time); given && (!ok || c.Before(d)) {
		return c, true
	}
	return d, ok
}
