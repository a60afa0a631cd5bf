package distlock

import (
	"context"

	"github.com/distlock/distlock/engine"
)

// RWMutex is a handle on the reader-writer lock name, across processes:
// readers share it, a writer excludes everyone. Each RLock and Lock returns
// a *Lease of its own (watchdog, loss signal, fencing token), and each
// reader's lease expires on its own, so a dead reader holds writers back for
// at most its own ttl.
//
// Requests are served in arrival order: a reader that arrives while a
// writer waits queues behind it, so a continuous stream of readers never
// starves a writer, and the readers queued together behind a writer are
// granted together after it. Tokens come from the name's one counter: a
// writer's token is greater than every earlier reader's and writer's (see
// docs/FENCING.md for what a reader's token can guard).
//
// Upgrades are refused: the owner of a read lease that asks for the write
// side (WithOwner) gets ErrUpgrade. A goroutine that holds a read lease and
// calls Lock with a fresh owner waits behind its own read lease: release it
// first.
type RWMutex struct {
	c    *Client
	name string
}

// RWMutex returns a handle on the reader-writer lock name. Nothing is sent
// until a call.
func (c *Client) RWMutex(name string) *RWMutex { return &RWMutex{c: c, name: name} }

// Name returns the lock's name.
func (rw *RWMutex) Name() string { return rw.name }

// RLock waits for the read side. Options are Acquire's.
func (rw *RWMutex) RLock(ctx context.Context, opts ...Option) (*Lease, error) {
	return rw.c.observed(ctx, rw.name, rw.options(opts, 1), waitForIt)
}

// TryRLock makes one attempt at the read side.
func (rw *RWMutex) TryRLock(ctx context.Context, opts ...Option) (*Lease, error) {
	return rw.c.observed(ctx, rw.name, rw.options(opts, 1), tryOnce)
}

// Lock waits for the write side. Options are Acquire's.
func (rw *RWMutex) Lock(ctx context.Context, opts ...Option) (*Lease, error) {
	return rw.c.observed(ctx, rw.name, rw.options(opts, engine.RWPermits), waitForIt)
}

// TryLock makes one attempt at the write side.
func (rw *RWMutex) TryLock(ctx context.Context, opts ...Option) (*Lease, error) {
	return rw.c.observed(ctx, rw.name, rw.options(opts, engine.RWPermits), tryOnce)
}

// Inspect lists the holders (Info.Holders: a writer has weight
// engine.RWPermits, a reader 1) and the waiters. It changes nothing.
func (rw *RWMutex) Inspect(ctx context.Context) (Info, error) {
	return rw.c.inspectShared(ctx, rw.name)
}

// options adds the lock's kind and the side's weight.
func (rw *RWMutex) options(opts []Option, weight int) []Option {
	return append(opts[:len(opts):len(opts)], func(o *options) {
		o.weightRW = o.weightSet
		o.kind, o.limit, o.weight = engine.RWLock, engine.RWPermits, weight
	})
}
