package distlock

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/flight"
)

// errAbandoned marks a request the caller stopped waiting for (its context
// ended, or the Client closed) while the request was still on its way: its
// outcome is settled in the background once the backend answers.
var errAbandoned = errors.New("request abandoned in flight")

// abandonedError is the error of a call whose request was abandoned in
// flight: it matches the context's error (cause) and errAbandoned.
type abandonedError struct{ cause error }

func (e *abandonedError) Error() string   { return e.cause.Error() }
func (e *abandonedError) Unwrap() []error { return []error{e.cause, errAbandoned} }

// sendSettled sends a request that may grant something (call) so that the
// caller's end never cuts the request short on the wire (package flight).
// The request runs on ctx's values without its cancellation, with ctx's
// deadline plus the release timeout; when ctx ends first, sendSettled
// returns at once with an error matching ctx's and errAbandoned, and
// settle gets the request's answer when it comes (in the background, on a
// sender, which Close waits for): it undoes a grant, knowing that the
// backend ran the request. An embedded engine (Capabilities.Embedded)
// answers within the call, which is then made directly.
func sendSettled[T any](c *Client, ctx context.Context, call func(context.Context) (T, error), settle func(T, error)) (T, error) {
	if c.inline {
		return call(ctx) // an embedded engine's answer is the request's outcome
	}
	rctx, cancel := c.flightContext(ctx)
	v, gone, err := flight.Send(ctx, c.senders.Run, func() (T, error) {
		defer cancel()
		return call(rctx)
	}, settle)
	if !gone {
		return v, err
	}
	// A request without a deadline of its own gets the release timeout
	// from now to answer.
	stop := time.AfterFunc(c.releaseTimeout, cancel)
	context.AfterFunc(rctx, func() { stop.Stop() })
	return v, &abandonedError{cause: context.Cause(ctx)}
}

// senderIdle is how long a sender (the goroutine that carries a request
// in flight) waits for the next request before it ends.
const senderIdle = time.Second

// flightContext is the context of a request in flight: ctx's values, never
// its cancellation, and ctx's deadline (if any) plus the release timeout.
// The added time is for the answer's settling only: the deadline ctx gave
// stays readable as the caller's (engine.CallerDeadline), for an engine
// that shares the caller's time among servers.
func (c *Client) flightContext(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx := context.WithoutCancel(ctx)
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(rctx)
	}
	return context.WithDeadline(engine.WithCallerDeadline(rctx, d), d.Add(c.releaseTimeout))
}
