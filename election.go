package distlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// ErrNoLeader is returned by Leader when nobody leads the election.
var ErrNoLeader = errors.New("distlock: no leader")

// Campaign waits until this caller is elected leader of the election name,
// or ctx ends, and returns the leadership. An election is a lock whose
// metadata is the leader's value and whose fencing token is the term: each
// new leadership has a greater term than every one before it, so a resource
// guarded by the term (package fence) rejects a deposed leader's late
// writes.
//
// Campaigners wait in the lock's queue like any Acquire (WithFair makes the
// order strict). The leadership is a lease: it renews itself, and when it
// can no longer be proven its Done channel closes and its Context is
// cancelled, before anyone else can be elected (given the clock assumptions
// in README.md). Options are Acquire's (WithTTL sets how quickly a dead
// leader is replaced); WithMetadata is the value's and is ignored.
//
// A Campaign by the owner that leads already (WithOwner) re-enters, as
// Acquire does (same term, one more hold), and proclaims value (as etcd's
// Campaign does on the leader's own lease), so Leader, observers and the
// Leadership agree on it, on every engine. If that Proclaim fails, the
// hold is dropped again and its error returned.
//
// value must be 1 to MaxMetadataLen bytes of UTF-8.
func (c *Client) Campaign(ctx context.Context, name, value string, opts ...Option) (*Leadership, error) {
	if err := validateValue(value); err != nil {
		return nil, err
	}
	opts = append(opts[:len(opts):len(opts)], func(o *options) { o.metadata, o.announce = value, true })
	l, err := c.Acquire(ctx, name, opts...)
	if err != nil {
		return nil, err
	}
	ld := &Leadership{lease: l, value: value}
	if l.reentered {
		// A re-entry keeps the stored value: store this one.
		if err := ld.Proclaim(ctx, value); err != nil {
			_ = l.Release(ctx)
			return nil, err
		}
	}
	return ld, nil
}

// validateValue checks a leader's value (rules.Value).
func validateValue(value string) error { return ruleErr(rules.Value(value)) }

// Leadership is one term as leader of an election. It is safe for
// concurrent use.
type Leadership struct {
	lease *Lease

	mu    sync.Mutex
	value string
}

// Name returns the election's name.
func (l *Leadership) Name() string { return l.lease.Name() }

// Term returns the term: the lease's fencing token. Pass it to the
// resources the leader writes to.
func (l *Leadership) Term() uint64 { return l.lease.Token() }

// Value returns the value this Leadership last set (Campaign, Proclaim).
// Another Leadership of the same owner (a re-entered Campaign) may have
// proclaimed another since; Leader reads the stored one.
func (l *Leadership) Value() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Lease returns the lease behind the leadership.
func (l *Leadership) Lease() *Lease { return l.lease }

// Done is closed when the leadership ends: lost, or resigned.
func (l *Leadership) Done() <-chan struct{} { return l.lease.Done() }

// Err returns nil while leading, a *LostError once the leadership was lost,
// or ErrReleased after Resign.
func (l *Leadership) Err() error { return l.lease.Err() }

// Context returns a context that is cancelled when the leadership ends: run
// the leader's work under it.
func (l *Leadership) Context() context.Context { return l.lease.Context() }

// Proclaim sets a new value for the leader without a new election (the
// term stays); observers are notified. It fails with ErrNotHeld when this
// is no longer the leader (the leadership is then lost), and with an
// *UnsupportedError on an engine that cannot change a lock's metadata in
// place.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if ctx == nil {
		return &ArgumentError{Arg: "context", Reason: "nil"}
	}
	if err := validateValue(value); err != nil {
		return err
	}
	if err := l.lease.heldErr(); err != nil {
		return err
	}
	c := l.lease.c
	ms, ok := c.eng.(engine.MetadataSetter)
	if !ok {
		return &UnsupportedError{Feature: "Proclaim", Engine: c.node, Reason: "the engine cannot change a lock's metadata in place"}
	}
	sent := time.Now()
	// By the term: a deposed leadership whose owner leads again under a
	// newer term (a force-release, then a campaign of the same WithOwner)
	// is refused, and changes nothing.
	st, err := ms.SetMetadata(ctx, engine.MetadataRequest{Name: l.lease.name, Owner: l.lease.owner, Metadata: value, Token: l.lease.token})
	if errors.Is(err, errors.ErrUnsupported) {
		return &UnsupportedError{Feature: "Proclaim", Engine: c.node, Reason: err.Error(), Err: err}
	}
	if err != nil {
		return c.backendErr(ctx, "proclaim", l.lease.name, err)
	}
	if st != engine.Extended {
		l.lease.apply(engine.ExtendResult{Status: st}, sent, l.lease.TTL(), nil)
		return l.lease.heldErr()
	}
	l.mu.Lock()
	l.value = value
	l.mu.Unlock()
	return nil
}

// Resign ends the leadership at once: the lock is released, and the next
// campaigner is woken and elected. Later calls return ErrReleased.
func (l *Leadership) Resign(ctx context.Context) error { return l.lease.Release(ctx) }
