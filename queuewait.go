package distlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// WaiterTTL is the heartbeat ttl of a waiter's entry in an engine's queue
// (engine.Queuer): a waiter whose process dies leaves the queue within it.
// Live waiters renew it every WaiterTTL/3, in the watchdog's Extend batches
// (one round trip per node per tick for all of a Client's leases and
// waiters).
const WaiterTTL = 3 * time.Second

// waitQueued waits in the engine's queue for the name (see engine.Queuer):
// the first refused attempt enters it; the waiter then sleeps until a
// wake-up addressed to it, its heartbeat's word that it heads the queue of
// a free lock, or (as the head) the holder's expiry. Nobody but the head is
// woken by a release. A waiter that gives up leaves the queue before the
// call returns.
func (a *attempt) waitQueued(q engine.Queuer) (*Lease, error) {
	c := a.c
	w := &queueWaiter{a: a, q: q, id: c.owners.next(), kick: make(chan struct{}, 1)}
	a.req.Waiter, a.req.WaiterTTL, a.req.Fair = w.id, WaiterTTL, a.o.fair
	defer w.close()
	// The subscription first, then the attempt that enters the queue: a
	// wake-up addressed to the waiter cannot go out before it listens.
	sub, err := subscribe(a, func(ctx context.Context) (engine.Subscription, error) {
		return q.SubscribeWaiter(ctx, a.name, w.id)
	})
	if err != nil {
		return nil, err
	}
	w.sub = sub // nil: no wake-ups, the waiter polls
	for {
		// No barging inside a Client: while goroutines of this Client wait
		// in the queue for the name, a new waiter does not take the free
		// lock ahead of them. (Not an explicit owner, which may be
		// re-entering.)
		a.req.Behind = a.req.Behind || (a.o.owner == "" && c.queuedOn(a.name))
		sent := time.Now()
		w.sent = true
		l, err := a.try()
		if l != nil {
			w.granted = true
			return l, nil
		}
		if err != nil {
			return nil, err
		}
		if a.g.Queued {
			w.enter(sent)
		}
		if err := w.sleep(); err != nil {
			return nil, err
		}
	}
}

// queueWaiter is one waiting call's entry in an engine's queue. It is also
// renewable: the watchdog sends its heartbeats.
type queueWaiter struct {
	a       *attempt
	q       engine.Queuer
	id      string
	sub     engine.Subscription // nil when none could be made
	timer   *time.Timer
	kick    chan struct{} // the heartbeat's wake-up (head of a free lock, or dropped)
	granted bool
	sent    bool // an attempt that may enter the queue was sent

	mu       sync.Mutex
	queued   bool      // entered the queue (and registered with the watchdog)
	lastSent time.Time // send time of the last confirmed heartbeat or attempt
	nextBeat time.Time
	beatFrom time.Time
}

// enter records that an attempt sent at sent put (or kept) the waiter in
// the queue: its deadline there was renewed, and the watchdog sends its
// heartbeats from now on.
func (w *queueWaiter) enter(sent time.Time) {
	w.mu.Lock()
	first := !w.queued
	w.queued = true
	w.confirmLocked(sent)
	w.mu.Unlock()
	if first {
		w.a.c.obs.Waiting(w.a.name, 1)
		w.a.c.countQueued(w.a.name, 1)
		w.a.c.renew.add(w)
	}
}

// confirmLocked records a renewal of the entry's deadline sent at sent;
// w.mu is held.
func (w *queueWaiter) confirmLocked(sent time.Time) {
	if sent.Before(w.lastSent) {
		return
	}
	w.lastSent = sent
	w.nextBeat = sent.Add(WaiterTTL / 3)
	w.beatFrom = sent.Add(WaiterTTL / 6)
}

// sleep waits for the next attempt.
func (w *queueWaiter) sleep() error {
	a := w.a
	d := time.Duration(-1) // until woken
	switch {
	case errors.Is(a.last, ErrBackend) || a.g.Retry > 0 || !a.g.Queued:
		d = a.nextTry()
	case a.g.Head:
		// The head also watches the holder's (or the reservation's) expiry:
		// nobody sends a message when a lease runs out.
		d = a.nextTry()
	}
	if w.sub == nil && (d < 0 || d > pollFallback) {
		d = jitter(pollFallback) // no wake-ups: poll
	}
	var wake <-chan struct{}
	if w.sub != nil {
		wake = w.sub.C()
	}
	return sleepFor(a, &w.timer, d, wake, w.kick)
}

// close leaves the queue unless granted (or never asked to enter it),
// stops the heartbeats and ends the subscription.
func (w *queueWaiter) close() {
	a := w.a
	w.mu.Lock()
	queued := w.queued
	w.mu.Unlock()
	if queued {
		a.c.renew.remove(w)
		a.c.countQueued(a.name, -1)
		a.c.obs.Waiting(a.name, -1)
	}
	// Leave even when no attempt's answer said queued: an attempt whose
	// answer was cut short (the context ended, Close) may still have
	// entered the queue.
	if w.sent && !w.granted {
		ctx, cancel := a.c.releaseContext(a.ctx)
		_ = w.q.Leave(ctx, a.name, w.id)
		cancel()
	}
	if w.sub != nil {
		w.sub.Close()
	}
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *queueWaiter) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// renewDue implements renewable.
func (w *queueWaiter) renewDue(now time.Time) (bool, time.Time, engine.ExtendRequest) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !now.Before(w.beatFrom), w.nextBeat,
		engine.ExtendRequest{Name: w.a.name, Owner: w.id, TTL: WaiterTTL, Waiter: true}
}

func (w *queueWaiter) sending() {}

// Deadline implements renewable: when the entry's deadline passes.
func (w *queueWaiter) Deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastSent.Add(WaiterTTL)
}

// apply implements renewable: it takes a heartbeat's answer. A waiter that
// heads the queue of a free lock, or that was dropped from the queue (it
// missed its heartbeats), is woken to try again (and re-enter).
func (w *queueWaiter) apply(r engine.ExtendResult, sent time.Time, _ time.Duration, batchErr error) {
	w.mu.Lock()
	switch {
	case batchErr != nil || r.Err != nil:
		w.nextBeat = time.Now().Add(jitter(min(WaiterTTL/10, time.Second)))
		w.beatFrom = w.nextBeat
	default:
		w.confirmLocked(sent)
	}
	w.mu.Unlock()
	if batchErr == nil && r.Err == nil && (r.Wake || r.Status != engine.Extended) {
		w.wake()
	}
}

// waitsOn reports whether goroutines of this Client wait for name, in the
// engine's queue or in local turns.
func (c *Client) waitsOn(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued[name] > 0 || c.turns[name] != nil
}

// queuedOn reports whether goroutines of this Client wait in the engine's
// queue for name.
func (c *Client) queuedOn(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued[name] > 0
}

// countQueued counts this Client's waiters in the engine's queue for name.
func (c *Client) countQueued(name string, d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queued[name] += d; c.queued[name] <= 0 {
		delete(c.queued, name)
	}
}
