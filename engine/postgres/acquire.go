package postgres

import (
	"context"
	"time"

	"github.com/distlock/distlock/engine"
)

// acquireMutex is Acquire for a mutex and, with r.Waiter, the queue entry of
// engine.Queuer: one call of the schema's acquire function. A name that
// holders of a semaphore or a reader-writer lock hold is refused with
// engine.KindError's *engine.ArgumentError, having changed nothing.
func (e *Engine) acquireMutex(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(); err != nil {
		return engine.Grant{}, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner, "metadata", r.Metadata, "attempt", r.Attempt, "waiter", r.Waiter); err != nil {
		return engine.Grant{}, err
	}
	var (
		g       engine.Grant
		token   int64
		holds   int32
		ttlUS   int64
		acquire bool
	)
	args := []any{r.Name, r.Owner, micros(r.TTL), r.Metadata, r.Attempt,
		r.Waiting, r.Waiter, micros(r.WaiterTTL), r.Order == engine.OrderFair, r.Order.Yields(), r.Order == engine.OrderNoReserve, r.Announce, e.ownChannel()}
	scan := []any{&acquire, &token, &holds, &g.Holder, &ttlUS, &g.Queued, &g.Head, &g.Reserved}
	// On a schema before version 7, acquire without the channel (waiters
	// are woken on the schema's channel), for good (signatures).
	err := e.v6.call(func() error {
		return e.pool.QueryRow(ctx, e.sql.acquire, args...).Scan(scan...)
	}, func() error {
		return e.pool.QueryRow(ctx, e.sql.acquireV6, args[:12]...).Scan(scan...)
	})
	if err != nil {
		// A name that holders of a shared lock hold: refused as memory does.
		return engine.Grant{}, e.sharedError(err, r.Name, 0, 0, 0)
	}
	if acquire {
		return engine.Grant{Acquired: true, Token: uint64(token), Count: int(holds)}, nil
	}
	g.HolderTTL = time.Duration(ttlUS) * time.Microsecond
	return g, nil
}

// ownChannel is the channel this engine's waiters are woken on: its
// listener's own; nil (the schema's) for an engine that does not listen.
func (e *Engine) ownChannel() any {
	if e.listen == nil {
		return nil
	}
	return e.listen.own
}

// micros is d in whole microseconds, rounded up: a ttl is never shortened.
func micros(d time.Duration) int64 {
	us := d / time.Microsecond
	if d%time.Microsecond != 0 {
		us++
	}
	return int64(us)
}
