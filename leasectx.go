package distlock

import "context"

// leaseContext is a context bound to a lease: it is cancelled when the lease
// ends (Lease.end cancels it, with the lease's Err as the cause), and its
// Done, Err and Value methods first end the lease when its deadline has
// passed. So its Err, and context.Cause (which asks Value), report a loss
// as soon as the deadline has passed, even before the lease's deadline
// timer has run; a context derived from it after the deadline (derivation
// asks Done and Value) starts cancelled.
type leaseContext struct {
	context.Context // cancelled by the lease's end
	l               checked
}

// checked is what a leaseContext checks: a *Lease, or a *LeaseSet (every
// member's deadline).
type checked interface {
	// current ends what passed its deadline and returns Err's answer.
	current() error
	// label names it in the context's String.
	label() string
}

// Done checks the lease's deadline, then returns the channel closed when
// the lease ends.
func (c *leaseContext) Done() <-chan struct{} {
	c.l.current()
	return c.Context.Done()
}

// Err checks the lease's deadline, then answers as the context it wraps.
func (c *leaseContext) Err() error {
	c.l.current()
	return c.Context.Err()
}

// Value checks the lease's deadline (so that context.Cause is current),
// then answers as the context it wraps.
func (c *leaseContext) Value(key any) any {
	c.l.current()
	return c.Context.Value(key)
}

// String names the context for fmt.
func (c *leaseContext) String() string { return c.l.label() + ".Context" }

// label implements checked.
func (l *Lease) label() string { return "distlock.Lease(" + l.name + ")" }

// bind returns a context derived from parent that is also cancelled when
// the lease ends (at once, by Lease.end, with its Err as the cause) and
// checks the lease's deadline as Err does; cancel releases it (with cause
// nil) when the caller is done with it.
func (l *Lease) bind(parent context.Context) (_ context.Context, cancel func()) {
	ctx, cancelCause := context.WithCancelCause(parent)
	l.notify(cancelCause)
	return &leaseContext{Context: ctx, l: l}, func() { cancelCause(nil) }
}

// notify has cancel called with the lease's Err when the lease ends (at
// once when it has ended already).
func (l *Lease) notify(cancel context.CancelCauseFunc) {
	l.mu.Lock()
	ended := l.err
	if ended == nil {
		l.cancels = append(l.cancels, cancel)
	}
	l.mu.Unlock()
	if ended != nil {
		cancel(ended)
	}
}
