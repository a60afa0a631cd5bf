package memory

import (
	"context"
	"slices"
	"time"

	"github.com/distlock/distlock/engine"
)

var _ engine.Queuer = (*Engine)(nil)

// waitQueue is one name's waiter queue (see engine.Queuer).
type waitQueue struct {
	entries  map[string]*waitEntry
	order    []*waitEntry // by arrival ticket
	seq      uint64
	reserved *waitEntry // the lock is kept for it until reservedUntil
	until    time.Time
}

type waitEntry struct {
	id        string
	ticket    uint64
	deadline  time.Time // heartbeat deadline
	fair      bool
	noReserve bool
	since     time.Time // when it entered the queue
	weight    int       // a shared lock's waiter: the permits it asks for
}

func (q *waitQueue) head() *waitEntry {
	if len(q.order) == 0 {
		return nil
	}
	return q.order[0]
}

func (q *waitQueue) remove(w *waitEntry) {
	delete(q.entries, w.id)
	for i, x := range q.order {
		if x == w {
			q.order = append(q.order[:i], q.order[i+1:]...)
			break
		}
	}
	if q.reserved == w {
		q.reserved = nil
	}
}

// settle drops the expired waiters of name's queue and a lapsed
// reservation (its waiter is skipped: dropped from the queue), and returns
// the queue, nil when it is empty; the caller holds e.mu.
func (e *Engine) settle(name string, now time.Time) *waitQueue {
	r := e.of(name)
	if r == nil || r.queue == nil {
		return nil
	}
	if r.queue = settleQueue(r.queue, now); r.queue == nil {
		e.tidy(name, r)
	}
	return r.queue
}

// dropQueue forgets name's (empty) mutex queue; the caller holds e.mu.
func (e *Engine) dropQueue(name string) {
	if r := e.of(name); r != nil {
		r.queue = nil
		e.tidy(name, r)
	}
}

// settleQueue drops q's expired waiters and a lapsed reservation; it
// returns q, or nil when it is empty.
func settleQueue(q *waitQueue, now time.Time) *waitQueue {
	if q.reserved != nil && !now.Before(q.until) {
		q.remove(q.reserved)
	}
	live := q.order[:0]
	for _, w := range q.order {
		if now.Before(w.deadline) {
			live = append(live, w)
			continue
		}
		delete(q.entries, w.id)
		if q.reserved == w {
			q.reserved = nil
		}
	}
	clear(q.order[len(live):])
	q.order = live
	if len(q.entries) == 0 {
		return nil
	}
	return q
}

// enqueue puts the waiter of r in name's queue, or refreshes its deadline;
// the caller holds e.mu.
func (e *Engine) enqueue(r engine.AcquireRequest, now time.Time) *waitQueue {
	rec := e.record(r.Name)
	q := rec.queue
	if q == nil {
		q = &waitQueue{entries: make(map[string]*waitEntry)}
		rec.queue = q
	}
	w := enqueueIn(q, r.Waiter, r.WaiterTTL, now)
	w.fair, w.noReserve = w.fair || r.Order == engine.OrderFair, w.noReserve || r.Order == engine.OrderNoReserve
	return q
}

// enqueueIn puts waiter id at the end of q, or refreshes its deadline.
func enqueueIn(q *waitQueue, id string, ttl time.Duration, now time.Time) *waitEntry {
	w := q.entries[id]
	if w == nil {
		q.seq++
		w = &waitEntry{id: id, ticket: q.seq, since: now}
		q.entries[id] = w
		q.order = append(q.order, w)
	}
	w.deadline = now.Add(ttl)
	return w
}

// requeue puts back w, the queue entry of a grant undone, at its arrival
// ticket in q (nil: a new queue), and returns q: the undone grant leaves
// the queue as if it had not been made. A waiter that queued again
// meanwhile keeps the earlier of its two places.
func requeue(q *waitQueue, w *waitEntry) *waitQueue {
	if q == nil {
		q = &waitQueue{entries: make(map[string]*waitEntry)}
	}
	if was := q.entries[w.id]; was != nil {
		if was.ticket <= w.ticket {
			return q
		}
		q.remove(was)
		w.deadline = later(w.deadline, was.deadline)
	}
	q.seq = max(q.seq, w.ticket) // later arrivals stay behind it
	at := len(q.order)
	for i, x := range q.order {
		if x.ticket > w.ticket {
			at = i
			break
		}
	}
	q.order = slices.Insert(q.order, at, w)
	q.entries[w.id] = w
	return q
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// wakeHead runs when name's lock is free (a release, a waiter kept
// behind): it reserves the lock for the head when due (reserveDue) and
// wakes the head. The caller holds e.mu.
func (e *Engine) wakeHead(name string, q *waitQueue, now time.Time) {
	if h, _ := reserveDue(q, now); h != nil {
		e.notifyWaiter(name, h.id)
	}
}

// wakeDueHead runs when name's lock is free but nobody released it (a
// lapsed reservation): it reserves the lock for the head when due, and
// wakes the head only then. The caller holds e.mu.
func (e *Engine) wakeDueHead(name string, q *waitQueue, now time.Time) {
	if h, due := reserveDue(q, now); due {
		e.notifyWaiter(name, h.id)
	}
}

// reserveDue returns the head of q to wake (nil when there is none, or
// the lock is reserved already), and reserves the lock for it when it is
// due: when it is fair or has waited StarvationBound or more (since it
// entered the queue).
func reserveDue(q *waitQueue, now time.Time) (h *waitEntry, due bool) {
	if q == nil || q.reserved != nil {
		return nil, false
	}
	if h = q.head(); h == nil {
		return nil, false
	}
	due = h.fair || (!h.noReserve && now.Sub(h.since) >= engine.StarvationBound)
	if due {
		q.reserved, q.until = h, now.Add(engine.ReserveTTL)
	}
	return h, due
}

// admit decides whether the free lock of name may go to r: not when it is
// reserved for another waiter, nor when another waiter heads the queue and
// either it or r is fair, or r asks to stay behind (r then queues behind it,
// and the head is woken).
// The caller holds e.mu.
func (e *Engine) admit(r engine.AcquireRequest, q *waitQueue, now time.Time) (engine.Grant, bool) {
	if q == nil {
		return engine.Grant{}, true
	}
	behind := false
	if h := q.head(); q.reserved == nil && h != nil && h.id != r.Waiter && (h.fair || r.Order.Yields()) {
		e.wakeHead(r.Name, q, now)
		behind = true
	}
	if !behind && (q.reserved == nil || q.reserved.id == r.Waiter) {
		return engine.Grant{}, true
	}
	g := engine.Grant{Reserved: true, HolderTTL: engine.ReserveTTL}
	if q.reserved != nil {
		g.HolderTTL = q.until.Sub(now)
	}
	if r.Waiter != "" {
		e.enqueue(r, now).mark(&g, r.Waiter)
	}
	return g, false
}

// mark fills in the queue fields of a refusal of waiter.
func (q *waitQueue) mark(g *engine.Grant, waiter string) {
	g.Queued = true
	g.Head = q.head() != nil && q.head().id == waiter
}

// granted takes r's waiter out of the queue after a grant, and returns its
// entry (nil: it was not queued), which an Undo of the grant puts back
// (requeue).
func (e *Engine) granted(r engine.AcquireRequest, q *waitQueue) *waitEntry {
	if q == nil || r.Waiter == "" {
		return nil
	}
	w := q.entries[r.Waiter]
	if w != nil {
		q.remove(w)
		if len(q.entries) == 0 {
			e.dropQueue(r.Name)
		}
	}
	return w
}

// heartbeat answers a waiter's heartbeat; the caller holds e.mu.
func (e *Engine) heartbeat(r engine.ExtendRequest, now time.Time) engine.ExtendResult {
	q := e.settle(r.Name, now)
	if q == nil || q.entries[r.Owner] == nil {
		return engine.ExtendResult{Status: engine.Missing}
	}
	w := q.entries[r.Owner]
	w.deadline = now.Add(r.TTL)
	free := e.live(r.Name, now) == nil
	if free {
		e.wakeDueHead(r.Name, q, now) // a lapsed reservation's successor
	}
	return engine.ExtendResult{Status: engine.Extended,
		Wake: free && q.head() == w && (q.reserved == nil || q.reserved == w)}
}

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind) to leaveMutex or leaveShared.
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leaveMutex, e.leaveShared)
}

// leaveMutex is Leave's mutex path: the waiter leaves the mutex's queue.
func (e *Engine) leaveMutex(ctx context.Context, r engine.LeaveRequest) error {
	name, waiter := r.Name, r.Waiter
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return err
	}
	now := e.now()
	q := e.settle(name, now)
	if q == nil || q.entries[waiter] == nil {
		return nil
	}
	wasHead := q.head().id == waiter
	q.remove(q.entries[waiter])
	if len(q.entries) == 0 {
		e.dropQueue(name)
		return nil
	}
	if wasHead && e.live(name, now) == nil {
		e.wakeHead(name, q, now)
	}
	return nil
}

// liveQueue counts name's live waiters and lists the first
// engine.MaxQueueListed of them (Info.Queue); the caller holds e.mu.
func (e *Engine) liveQueue(name string, now time.Time) (int, []engine.Waiter) {
	n := 0
	var list []engine.Waiter
	if r := e.of(name); r != nil && r.queue != nil {
		for _, w := range r.queue.order {
			if now.Before(w.deadline) {
				n++
				if n <= engine.MaxQueueListed {
					list = append(list, engine.Waiter{ID: w.id, Waited: now.Sub(w.since)})
				}
			}
		}
	}
	return n, list
}

// Capabilities implements engine.Describer: fair, embedded.
func (e *Engine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Fair: true, Embedded: true}
}
