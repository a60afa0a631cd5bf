package distlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
)

// EventObserver is an optional interface of an Observer, found by type
// assertion as database/sql finds its drivers' optional interfaces: an
// Observer that implements it also hears each lock call's events with the
// caller's context and the lease's identity (kind, owner, token, engine),
// so that a tracer can parent its spans on the caller's and link a
// waiter's to its holder's (the OpenTelemetry adapter, module
// github.com/distlock/distlock/otel). The Observer's own methods are still
// called; these come in addition. Like those, they run synchronously on
// the lock path: fast, non-blocking, safe for concurrent use.
type EventObserver interface {
	Observer
	// StartAcquire: an Acquire or TryAcquire call began (ev.Name, Kind,
	// Owner when explicit, Engine, Wait). The context it returns is the
	// one the call's later events receive. stamp, when not empty, is a
	// trace context (a W3C traceparent) stored with the grant in the
	// lock's metadata, where other processes read it (TraceMetadata);
	// it is dropped when it does not fit in MaxMetadataLen beside the
	// caller's metadata, and never added to an election's value.
	StartAcquire(ctx context.Context, ev Event) (_ context.Context, stamp string)
	// AcquireWaiting: the call's first attempt was refused and it waits.
	// ev.Holders are the lock's holders as the engine's Inspect reported
	// them at that moment (their Metadata carries their stamps); nil when
	// the Inspect failed.
	AcquireWaiting(ctx context.Context, ev Event)
	// EndAcquire: the call ended, granted (ev.Err nil: ev.Owner and Token
	// are the lease's) or not (ev.Err). ev.Waited, Contended and Queued say
	// how. The context it returns for a grant is the one the lease's
	// events receive.
	EndAcquire(ctx context.Context, ev Event) context.Context
	// LeaseRenewed: the watchdog renewed the lease (ev.Err nil) or a
	// renewal failed (ev.Err).
	LeaseRenewed(ctx context.Context, ev Event)
	// LeaseEnded: the lease was released (ev.Cause 0) or lost (ev.Cause),
	// after being held for ev.Held.
	LeaseEnded(ctx context.Context, ev Event)
}

// Event describes one step of a lock call or lease for an EventObserver.
type Event struct {
	// Name is the lock's name; Kind "mutex", "semaphore" or "rwlock"
	// (engine.Kind's names); Engine the node's name as errors give it,
	// else the engine's package ("memory").
	Name, Kind, Engine string
	// Owner is the grant's owner token: the explicit owner (WithOwner)
	// from the start, a random owner once granted. Token is the grant's
	// fencing token.
	Owner string
	Token uint64
	// Wait: Acquire (true) or TryAcquire (false).
	Wait bool
	// Waited is how long the call took until the event.
	Waited time.Duration
	// Contended: an attempt found the lock held by another owner.
	// Queued: the call entered the engine's waiter queue; Head: it was
	// the queue's head at its last attempt (no deeper position is known).
	Contended, Queued, Head bool
	// Holders: AcquireWaiting's view of who held the lock.
	Holders []engine.Holder
	// Held is how long the lease was held (LeaseEnded).
	Held time.Duration
	// Cause is why the lease was lost (LeaseEnded; 0 when released).
	Cause LossCause
	// Err is why the call failed (EndAcquire) or the renewal's error
	// (LeaseRenewed).
	Err error
}

// observation is one call's or lease's link to the Client's EventObserver:
// a zero observation (no EventObserver) does nothing.
type observation struct {
	eo  EventObserver
	ctx context.Context
	ev  Event
	a   *attempt // the call's (nil for a lease's observation)
	// started: the call's observation began (startObservation), at
	// start, with or without an EventObserver; stamp is the one its
	// StartAcquire returned.
	started bool
	start   time.Time
	stamp   string
}

// startObservation starts the call's observation: StartAcquire.
func (c *Client) startObservation(ctx context.Context, name string, o options, wait bool) observation {
	ob := observation{started: true, start: time.Now()}
	eo, ok := c.obs.(EventObserver)
	if !ok {
		return ob
	}
	ob.eo, ob.ev = eo, Event{Name: name, Kind: o.kind.String(), Engine: engineName(c), Owner: o.owner, Wait: wait}
	ob.ctx, ob.stamp = eo.StartAcquire(ctx, ob.ev)
	return ob
}

// stampInto puts the observation's stamp into req's metadata, after the
// caller's (o.metadata), when it fits; never into an election's value.
func (ob *observation) stampInto(o options, req *engine.AcquireRequest) {
	if ob.stamp != "" && !o.announce {
		if md := stampMetadata(o.metadata, ob.stamp); len(md) <= MaxMetadataLen {
			req.Metadata = md
		}
	}
}

// engineName names the Client's engine for events: the node as errors
// name it, else the engine's package ("memory" for *memory.Engine).
func engineName(c *Client) string {
	if c.node != "" {
		return c.node
	}
	t := strings.TrimPrefix(fmt.Sprintf("%T", c.eng), "*")
	if i := strings.IndexByte(t, '.'); i > 0 {
		return t[:i]
	}
	return t
}

// waitingInspectBound bounds the Inspect that tells AcquireWaiting who
// holds the lock.
const waitingInspectBound = 2 * time.Second

// waiting tells the observer that the attempt a waits, with the holders
// the engine reports.
func (ob *observation) waiting(a *attempt) {
	if ob.eo == nil {
		return
	}
	// The wait does not hang on it: the Inspect is bounded (and ended by
	// Close, through a.ctx).
	ctx, cancel := context.WithTimeout(a.ctx, waitingInspectBound)
	defer cancel()
	info, err := a.c.eng.Inspect(ctx, a.name)
	ev := ob.ev
	if err == nil {
		ev.Holders = info.Holders
		if info.Held && len(ev.Holders) == 0 {
			ev.Holders = []engine.Holder{{Owner: info.Owner, Count: info.Count, Token: info.Token, TTL: info.TTL, Metadata: info.Metadata, Weight: 1}}
		}
	}
	ev.Waited, ev.Contended = time.Since(a.start), a.contended
	ob.eo.AcquireWaiting(ob.ctx, ev)
}

// end tells the observer how the call ended, and hands a granted lease the
// observation of its hold.
func (ob *observation) end(l *Lease, err error, waited time.Duration) {
	if ob.eo == nil {
		return
	}
	ev := ob.ev
	ev.Waited, ev.Err = waited, err
	if a := ob.a; a != nil {
		ev.Contended, ev.Queued, ev.Head = a.contended, a.queued, a.g.Head
	}
	if l != nil {
		ev.Owner, ev.Token = l.owner, l.token
	}
	ctx := ob.eo.EndAcquire(ob.ctx, ev)
	if l == nil {
		return
	}
	ev.Waited, ev.Err, ev.Holders = 0, nil, nil
	lob := &observation{eo: ob.eo, ctx: ctx, ev: ev}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obs = lob
	if l.err != nil && !l.untold {
		// Ended before the call returned: the end is told now (a
		// release's once it was answered: tell tells it then).
		var lost *LostError
		if errors.As(l.err, &lost) {
			lob.ended(lost.Cause, time.Since(l.granted))
		} else {
			lob.ended(l.endedAs, time.Since(l.granted))
		}
	}
}

// observed returns the lease's observation (nil: none yet).
func (l *Lease) observed() *observation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.obs
}

// renewalErr is a renewal's outcome as LeaseRenewed reports it: nil when
// it renewed, else its error or what the engine answered.
func renewalErr(ok bool, err error, st engine.ExtendStatus) error {
	switch {
	case ok:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("renewal refused: the engine answered %v", st)
}

// renewed tells the observer of a renewal of the lease.
func (ob *observation) renewed(err error) {
	if ob == nil || ob.eo == nil {
		return
	}
	ev := ob.ev
	ev.Err = err
	ob.eo.LeaseRenewed(ob.ctx, ev)
}

// ended tells the observer that the lease ended after held.
func (ob *observation) ended(cause LossCause, held time.Duration) {
	if ob == nil || ob.eo == nil {
		return
	}
	ev := ob.ev
	ev.Cause, ev.Held = cause, held
	ob.eo.LeaseEnded(ob.ctx, ev)
}
