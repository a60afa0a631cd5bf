package distlock

import (
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

// queueWaiter is one waiting call's entry in an engine's queue. It is also
// renewable: the watchdog sends its heartbeats.
type queueWaiter struct {
	a    *attempt
	id   string
	kick chan struct{} // the heartbeat's wake-up (head of a free lock, or dropped)

	mu       sync.Mutex
	queued   bool      // entered the queue (and registered with the watchdog)
	lastSent time.Time // send time of the last confirmed heartbeat or attempt
	beat     schedule  // when the watchdog sends its heartbeat
	// failing is the send time of the first heartbeat that failed since
	// the last confirmation (zero: none): the wait's failure budget counts
	// from it (waiting.Loop.Failing).
	failing time.Time
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
	w.beat = renewAfter(sent, WaiterTTL)
	w.failing = time.Time{}
}

// failingSince returns the send time of the first heartbeat that failed
// since the entry was last confirmed (zero: none).
func (w *queueWaiter) failingSince() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failing
}

// close stops the heartbeats (the wait loop leaves the queue itself).
func (w *queueWaiter) close() {
	w.mu.Lock()
	queued := w.queued
	w.mu.Unlock()
	if queued {
		a := w.a
		a.c.renew.remove(w)
		a.c.countQueued(a.name, -1)
		a.c.obs.Waiting(a.name, -1)
	}
}

func (w *queueWaiter) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// renewDue implements renewable.
func (w *queueWaiter) renewDue(now time.Time) (bool, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.beat.due(now)
}

// sending implements renewable: a heartbeat is sent whenever due.
func (w *queueWaiter) sending() (engine.ExtendRequest, bool) {
	return engine.ExtendRequest{Name: w.a.name, Owner: w.id, TTL: WaiterTTL, Waiter: true, Kind: w.a.o.kind}, true
}

// Deadline implements renewable: when the entry's deadline passes.
func (w *queueWaiter) Deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastSent.Add(WaiterTTL)
}

// apply implements renewable: it takes a heartbeat's answer. A waiter that
// heads the queue of a free lock, or that was dropped from the queue (it
// missed its heartbeats), is woken to try again (and re-enter). So is one
// whose heartbeat failed (an error, or no answer before the entry's
// deadline): its wait makes an attempt, and the backend failure budget
// (WithBackendFailureBudget) counts from that heartbeat's send time,
// rather than the wait sleeping until a wake-up that a backend that
// stopped answering never sends.
func (w *queueWaiter) apply(r engine.ExtendResult, sent time.Time, _ time.Duration, batchErr error) {
	failed := batchErr != nil || r.Err != nil
	w.mu.Lock()
	if failed {
		w.beat = retryAfter(WaiterTTL)
		if w.failing.IsZero() || sent.Before(w.failing) {
			w.failing = sent
		}
	} else {
		w.confirmLocked(sent)
	}
	w.mu.Unlock()
	if failed || r.Wake || r.Status != engine.Extended {
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
