package distlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock/engine"
)

// Do acquires the lock name (waiting as Acquire does), runs fn under it and
// releases it. fn's context is cancelled when ctx ends or the lease is lost;
// its cause (context.Cause) then says which. Its Err checks the lease's
// deadline as Lease.Err does, so it reports a loss as soon as the deadline
// has passed.
//
// Do returns fn's error first; a loss of the lease while fn ran and a
// failed release are joined after it (errors.Join), never replacing it. It
// returns nil only when fn returned nil and the lease held throughout. If
// fn panics, the lease is released and the panic goes on.
func (c *Client) Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...Option) error {
	if fn == nil {
		return &ArgumentError{Arg: "fn", Reason: "nil"}
	}
	l, err := c.Acquire(ctx, name, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, l, fn)
}

// held is what Do and DoAll run fn under: a *Lease or a *LeaseSet.
type held interface {
	bind(ctx context.Context) (context.Context, func())
	Err() error
	Release(ctx context.Context) error
}

// runHeld runs fn on a context bound to h, then releases h, and joins fn's
// error, a loss of h while fn ran and a failed release. When fn panics (or
// calls runtime.Goexit), h is released before the panic goes on up the
// stack: a caller that recovers it (an HTTP server recovers a handler's)
// is left with no lock held and renewed.
func runHeld(ctx context.Context, h held, fn func(ctx context.Context) error) error {
	fctx, cancel := h.bind(ctx) // checks the deadline as h.Err does
	returned := false
	defer func() {
		if !returned {
			cancel()
			_ = h.Release(ctx)
		}
	}()
	fnErr := fn(fctx)
	returned = true
	cancel()

	lost := h.Err() // nil unless lost while fn ran
	relErr := h.Release(ctx)
	if lost != nil && errors.Is(relErr, ErrNotHeld) {
		relErr = nil // the loss says it already
	}
	return errors.Join(fnErr, lost, relErr)
}

// Attach rebuilds a lease from its name and owner token (Lease.Owner), for
// example in another process, so that it can be extended or released there.
// It proves ownership by extending the lock to the ttl of opts (default 30s),
// and fails with ErrNotHeld if owner does not hold it. It rebuilds a mutex's
// lease only: a name that owner holds as a semaphore or an RW lock is
// refused with an *ArgumentError (ErrInvalidArgument) naming its kind, and
// changes nothing. The attached lease
// renews itself unless WithAutoRenew(false); releasing it drops one hold.
// It adds no hold: with the lease it was attached from, it shares one, so
// while the owner holds the lock once, its ttl (and its Extends) set the
// expiry for both, shorter ones too; stop the other lease first, or attach
// with a ttl no shorter than it. WithOwner and WithMetadata are ignored.
// The Client's Observer counts the attached lease as a hold: Acquired
// (waited: the extension's round trip, not contended) when it is
// rebuilt, Released or Lost when it ends; an EventObserver hears no
// acquire and no hold span of it (it was acquired elsewhere).
func (c *Client) Attach(ctx context.Context, name, owner string, opts ...Option) (*Lease, error) {
	if err := c.begin(ctx, name); err != nil {
		return nil, err
	}
	defer c.endCall()
	o := buildOptions(opts)
	o.owner, o.metadata = owner, ""
	if err := c.checkOptions(&o); err != nil {
		return nil, err
	}
	if owner == "" {
		return nil, &ArgumentError{Arg: "owner", Reason: "empty"}
	}
	sent := time.Now()
	res, err := c.extendOne(ctx, engine.ExtendRequest{Name: name, Owner: owner, TTL: o.ttl})
	if err != nil {
		return nil, c.backendErr(ctx, "attach", name, err)
	}
	if res.Status != engine.Extended {
		// Owner holding name as a shared kind is refused as such, whatever
		// the mutex's extension said (HeldByOther too: an earlier
		// force-release's mark of owner stands on some engines).
		if err := c.heldAsShared(ctx, name, owner); err != nil {
			return nil, err
		}
		if res.Status == engine.HeldByOther {
			return nil, fmt.Errorf("%w: %q is held by another owner", ErrNotHeld, name)
		}
		return nil, fmt.Errorf("%w: %q is not held", ErrNotHeld, name)
	}
	return c.grant(ctx, name, owner, o, res.Token, sent, 0, keepHold)
}

// heldAsShared returns the refusal of an Attach whose extension found no
// mutex because owner holds name as a shared kind (a semaphore's permits,
// an RW lock's side): Attach rebuilds a mutex's lease, and telling the live
// holder that its lock is gone would be false. It returns nil when owner
// holds nothing of name as one (or the Inspect fails).
func (c *Client) heldAsShared(ctx context.Context, name, owner string) error {
	info, err := c.eng.Inspect(ctx, name)
	if err != nil || !info.Kind.Shared() {
		return nil
	}
	for _, h := range info.Holders {
		if h.Owner == owner {
			return &ArgumentError{Arg: "name", Reason: fmt.Sprintf("%q is a %s, not a mutex: Attach rebuilds a mutex's lease only", name, info.Kind)}
		}
	}
	return nil
}
