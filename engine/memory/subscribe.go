package memory

import (
	"context"

	"github.com/distlock/distlock/engine"
)

// Subscriptions live in the Engine's engine.Hub, which needs no transport:
// the Engine's operations wake them directly.

// Subscribe implements engine.Engine.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.SubscribeWaiter(ctx, name, "")
}

// SubscribeWaiter implements engine.Queuer.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	return e.hub.Subscribe(ctx, name, waiter)
}

// notifyWaiter wakes the subscriptions of one waiter ("" : the plain
// subscribers); the caller holds e.mu.
func (e *Engine) notifyWaiter(name, waiter string) { e.hub.WakeWaiter(name, waiter) }

// announce wakes the plain subscribers of name (an election's observers)
// with the holder's state l: a new leader or value, which they report
// without reading the lock. The caller holds e.mu.
func (e *Engine) announce(name string, l *lock) {
	if l.metadata == "" {
		e.hub.WakeWaiter(name, "") // no value: nobody leads, as a read would say
		return
	}
	e.hub.Notice(name, engine.Notice{Held: true, Token: l.token, Metadata: l.metadata, TTL: l.expires.Sub(e.now())})
}

// freed wakes the waiters of a lock that was just freed: the head of its
// queue (reserving the lock for it when due), and every plain subscriber,
// which waits outside the queue. The caller holds e.mu.
func (e *Engine) freed(name string) {
	now := e.now()
	e.wakeHead(name, e.settle(name, now), now)
	e.notifyWaiter(name, "")
}
