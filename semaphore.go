package distlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// Semaphore is a handle on the counting semaphore name with limit permits,
// in the style of golang.org/x/sync/semaphore.Weighted, across processes.
// Each grant is a *Lease of its own: its own owner token, watchdog, loss
// signal and fencing token, and its permits expire on their own in the
// lock authority's time, so a holder that crashes frees exactly its own
// permits after its ttl.
//
// Waiters are served strictly in arrival order, with their weights: a
// request is granted only when its weight fits in the free permits and
// nobody is queued ahead of it, so a large request at the head is not
// overtaken by later small ones. Only the head is woken. The order is the
// queue's in the lock authority: an outage of the authority longer than
// the waiters' heartbeat ttl (WaiterTTL) empties it, and the waiters queue
// again in the order they come back (docs/ARCHITECTURE.md, Waiting).
//
// The limit is stored with the lock, and the stored limit governs: the
// first call on a semaphore that does not exist makes it with the handle's
// limit; later calls that declare another limit (a client not yet
// redeployed after a SetLimit) are served under the stored one, not
// refused. Inspect reports the stored limit (Info.Limit). A Semaphore is
// cheap; make one per use or keep it.
type Semaphore struct {
	c     *Client
	name  string
	limit int
}

// Semaphore returns a handle on the semaphore name, made with limit
// permits if it does not exist (once it does, its stored limit governs).
// Nothing is sent until a call; a limit below 1 makes every call fail
// with an *ArgumentError.
func (c *Client) Semaphore(name string, limit int) *Semaphore {
	return &Semaphore{c: c, name: name, limit: limit}
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Limit returns the limit the handle declares: the one it was made with,
// or its last SetLimit's. The stored limit, which governs, may differ
// (another client's SetLimit): Inspect reports it.
func (s *Semaphore) Limit() int { return s.limit }

// Acquire waits until the permits are granted (one, or WithWeight's) or
// ctx ends, and returns their lease. Options are Acquire's (WithTTL,
// WithOwner, WithMetadata, WithAutoRenew) and WithWeight; WithFair changes
// nothing: a semaphore is always first come, first served.
func (s *Semaphore) Acquire(ctx context.Context, opts ...Option) (*Lease, error) {
	return s.c.observed(ctx, s.name, s.options(opts), waitForIt)
}

// TryAcquire makes one attempt. When the permits are not free, or others
// wait for them (LockedError.Queued), it returns a *LockedError.
func (s *Semaphore) TryAcquire(ctx context.Context, opts ...Option) (*Lease, error) {
	return s.c.observed(ctx, s.name, s.options(opts), tryOnce)
}

// options adds the semaphore's kind and limit, and the default weight.
func (s *Semaphore) options(opts []Option) []Option {
	return append(opts[:len(opts):len(opts)], func(o *options) {
		o.kind, o.limit = engine.Semaphore, s.limit
		if !o.weightSet {
			o.weight = 1
		}
	})
}

// SetLimit changes the semaphore's stored limit (and the handle's),
// making the semaphore when it does not exist. A name used as another
// kind (held, with live waiters of that kind queued, or an RW lock whose
// kind is still stored after its last holder left) is refused with an
// *ArgumentError, and nothing changes. A smaller limit never
// evicts a holder: new permits are granted once they fit under it. Queued
// waiters keep their places, and the handles of other Clients, whatever
// limit they declare, are served under the new one; a queued waiter that
// asks for more permits than the new limit can never be granted, and its
// Acquire ends at once with an *ArgumentError (the weight above the stored
// limit), so the waiters behind it go on. An engine that cannot
// keep the limit (a quorum, for a limit above 1) answers an
// *UnsupportedError.
func (s *Semaphore) SetLimit(ctx context.Context, limit int) error {
	if err := s.c.check(ctx, s.name); err != nil {
		return err
	}
	if err := ruleErr(rules.Limit(limit)); err != nil {
		return err
	}
	sh, ok := s.c.eng.(engine.Sharer)
	if !ok {
		return &UnsupportedError{Feature: "semaphore", Engine: s.c.node, Reason: "the engine keeps no shared locks (engine.Sharer)"}
	}
	if _, err := sh.SetLimit(ctx, s.name, limit); err != nil {
		if errors.Is(err, errors.ErrUnsupported) && ctx.Err() == nil {
			return &UnsupportedError{Feature: fmt.Sprintf("semaphore limit %d", limit), Engine: s.c.node, Reason: err.Error(), Err: err}
		}
		return s.c.backendErr(ctx, "set-limit", s.name, err)
	}
	s.limit = limit
	return nil
}

// Inspect lists the semaphore's holders (Info.Holders: owner, weight,
// token, time left), its stored limit (Info.Limit, 0 when it does not
// exist) and its waiters. It changes nothing.
func (s *Semaphore) Inspect(ctx context.Context) (Info, error) { return s.c.inspectShared(ctx, s.name) }

// inspectShared reports a shared lock: the engine's Inspect, which
// describes the name whatever its kind; a name that is no shared lock (a
// mutex's, or none) is reported as a shared lock that does not exist.
func (c *Client) inspectShared(ctx context.Context, name string) (Info, error) {
	if err := c.check(ctx, name); err != nil {
		return Info{}, err
	}
	if _, ok := c.eng.(engine.Sharer); !ok {
		return Info{}, &UnsupportedError{Feature: "shared locks", Engine: c.node, Reason: "the engine keeps no shared locks (engine.Sharer)"}
	}
	info, err := c.eng.Inspect(ctx, name)
	if err != nil {
		return Info{}, c.backendErr(ctx, "inspect", name, err)
	}
	return info.SharedView(), nil
}
