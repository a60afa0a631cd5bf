package server

import (
	"context"
	"errors"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/flight"
)

// errAbandoned marks an attempt of a held-open acquire that its wait
// stopped waiting for (the budget ended, or the client left) while the
// engine had not answered: its outcome is settled in the background.
var errAbandoned = errors.New("no answer from the backend before the wait ended")

// abandonedError is the error of an attempt abandoned in flight: it
// matches errAbandoned and the wait's context error (cause).
type abandonedError struct{ cause error }

func (e *abandonedError) Error() string   { return errAbandoned.Error() + ": " + e.cause.Error() }
func (e *abandonedError) Unwrap() []error { return []error{errAbandoned, e.cause} }

// flightAcquire makes one attempt of a held-open acquire the way the
// Client's attempts are sent (internal/flight, the Client's sendSettled):
// the engine call runs on ctx's values without its cancellation, bounded
// by engineTimeout (engineAcquire), so that its outcome is always known;
// but the wait stops waiting for it when wctx ends (the wait's deadline,
// or the client gone), and then returns at once an error matching
// errAbandoned. The answer that comes later is settled in the background
// (settleAcquire). So a held-open acquire is answered within its wait_ms
// plus the queue's leave (waiting.LeaveTimeout), whatever the backend
// does, and not when a stalled backend's call times out.
func (s *Server) flightAcquire(wctx, ctx context.Context, c acquireCall) (engine.Grant, error) {
	g, gone, err := flight.Send(wctx, s.detach, func() (engine.Grant, error) {
		return s.engineAcquire(ctx, c.req)
	}, func(g engine.Grant, err error) {
		s.settleAcquire(ctx, c, g, err)
	})
	if gone {
		return g, &abandonedError{cause: context.Cause(wctx)}
	}
	return g, err
}

// detach runs f, engine work a request leaves to finish after its answer
// (bounded by engineTimeout), on a goroutine of its own that Shutdown
// waits for (Server.detached).
func (s *Server) detach(f func()) {
	s.detached.Add(1)
	go func() {
		defer s.detached.Done()
		f()
	}()
}

// settleAcquire settles the late answer (g, err) of an attempt its wait
// abandoned: a grant nobody will be told of is taken back (undoGrant) when
// the server made the request's owner or attempt (c.minted; a client's own
// owner and attempt are the client's to clean up, as for a client that
// left: API.md, "Waiting"), and a queue entry the attempt made after the
// wait left the queue is left again. A failed attempt changed nothing
// that the server can know of.
func (s *Server) settleAcquire(ctx context.Context, c acquireCall, g engine.Grant, err error) {
	switch {
	case err != nil:
	case g.Acquired && c.minted:
		s.undoGrant(ctx, c.req, c.req.Waiter)
	case g.Queued:
		s.leaveQueue(ctx, c.req, c.req.Waiter)
	}
}

// undoGrant takes back req's grant, which nobody will be told of, with an
// undo (engine.ReleaseRequest.Undo), and then takes waiter, the queue
// entry of the wait that asked for it ("" when it did not queue), out of
// the queue: an undo puts back in its place the entry the grant took out
// (a quorum's minority grant costs its waiter no place), and this wait is
// over, so that entry would head the queue, dead, until its heartbeat
// deadline.
func (s *Server) undoGrant(ctx context.Context, req engine.AcquireRequest, waiter string) {
	rctx, cancel := engineContext(ctx)
	_, _ = s.eng.Release(rctx, engine.ReleaseRequest{Name: req.Name, Owner: req.Owner, Kind: req.Kind, Undo: true})
	cancel()
	s.leaveQueue(ctx, req, waiter)
}

// leaveQueue takes waiter out of the queue of req's name (nothing when
// waiter is "" or the engine keeps no queue).
func (s *Server) leaveQueue(ctx context.Context, req engine.AcquireRequest, waiter string) {
	q, ok := s.eng.(engine.Queuer)
	if !ok || waiter == "" {
		return
	}
	lctx, cancel := engineContext(ctx)
	_ = q.Leave(lctx, engine.LeaveRequest{Name: req.Name, Waiter: waiter, Kind: req.Kind})
	cancel()
}
