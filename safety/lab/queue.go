package lab

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/safety/check"
	"github.com/distlock/distlock/safety/history"
)

// The waiter-queue scenarios (13-16, single-node mode). Their injectors
// find their targets in the queue itself: each client's waiting call is
// kept from the history (its start, and the waiter id it entered the
// queue under, reported by the client's engine wrapper), and the lab reads
// the queue's state from the node directly (not through a proxy). Under
// the queue-hidden control there is no queue in Redis: a client's place
// is then its rank among the waiting calls by start.

// waitCall is a client's waiting call in progress.
type waitCall struct {
	since  int64  // the call's start
	waiter string // its waiter id in the queue, once it entered
}

// trackWaits keeps e.waiting from the history as it is recorded.
func (e *env) trackWaits() {
	e.waiting = map[string]*waitCall{}
	e.rec.Tap(func(ev history.Event) {
		e.wmu.Lock()
		defer e.wmu.Unlock()
		switch ev.Kind {
		case history.KindWait:
			e.waiting[ev.Client] = &waitCall{since: ev.Invoke}
		case history.KindQueued:
			if w := e.waiting[ev.Client]; w != nil && ev.Invoke >= w.since {
				w.waiter = ev.Waiter
			}
		case history.KindAcquire, history.KindClientExit:
			delete(e.waiting, ev.Client)
		}
	})
}

// waitOf returns client's waiting call in progress.
func (e *env) waitOf(client string) (waitCall, bool) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	w, ok := e.waiting[client]
	if !ok {
		return waitCall{}, false
	}
	return *w, true
}

// queueVisible reports whether the run's clients wait in the queue.
func (e *env) queueVisible() bool { return e.spec.Control != NoQueue }

// qstate is the queue of the run's lock as the lab sees it, for one
// waiter.
type qstate struct {
	Len         int64  // waiters queued
	Rank        int64  // the waiter's place (0: head), -1 when not queued
	ReservedFor string // the waiter the free lock is reserved for
	Held        bool   // the lock key exists
}

// queueKeys names the lock's keys in Redis (engine/redis, default prefix).
func (e *env) queueKeys() (lock, q, qs string) {
	lock = "distlock:{" + e.name + "}"
	return lock, lock + ":q", lock + ":qs"
}

// queueState reads the queue's state for waiter (may be empty) from node 0.
func (e *env) queueState(waiter string) (qstate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	lock, q, qs := e.queueKeys()
	pipe := e.admin[0].Pipeline()
	n := pipe.ZCard(ctx, q)
	rv := pipe.HGet(ctx, qs, "rv")
	held := pipe.Exists(ctx, lock)
	var rank *goredis.IntCmd
	if waiter != "" {
		rank = pipe.ZRank(ctx, q, waiter)
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, goredis.Nil) {
		return qstate{}, err
	}
	st := qstate{Len: n.Val(), ReservedFor: rv.Val(), Held: held.Val() == 1, Rank: -1}
	if rank != nil && rank.Err() == nil {
		st.Rank = rank.Val()
	}
	return st, nil
}

// stateOf returns the queue's state for client's waiting call: from Redis
// when the clients see the queue, else from the history (rank among the
// waiting calls by start; nothing is ever reserved).
func (e *env) stateOf(client string) (qstate, bool) {
	w, ok := e.waitOf(client)
	if !ok {
		return qstate{}, false
	}
	if e.queueVisible() {
		if w.waiter == "" {
			return qstate{}, false
		}
		st, err := e.queueState(w.waiter)
		if err != nil {
			return qstate{}, false
		}
		return st, st.Rank >= 0
	}
	st, err := e.queueState("")
	if err != nil {
		return qstate{}, false
	}
	e.wmu.Lock()
	var starts []int64
	for _, c := range e.waiting {
		starts = append(starts, c.since)
	}
	e.wmu.Unlock()
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	st.Len, st.Rank = int64(len(starts)), int64(sort.Search(len(starts), func(i int) bool { return starts[i] >= w.since }))
	return st, true
}

// procSlots are the process clients (the targets of signals).
func (e *env) procSlots() []*slot {
	var out []*slot
	for _, s := range e.slots {
		if s.current() != nil {
			out = append(out, s)
		}
	}
	return out
}

// waitInQueue polls (every 5 ms) until the waiting call of one of slots
// is in the queue in a state that want accepts, or ctx ends. It returns
// the slot, its client id and waiter id.
func (e *env) waitInQueue(ctx context.Context, slots []*slot, want func(qstate) bool) (*slot, string, string, bool) {
	for {
		start := e.rng.IntN(len(slots))
		for k := range slots {
			s := slots[(start+k)%len(slots)]
			id := s.id()
			if st, ok := e.stateOf(id); ok && want(st) {
				w, _ := e.waitOf(id)
				return s, id, w.waiter, true
			}
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return nil, "", "", false
		}
	}
}

// killWaiter SIGKILLs a process client (stopped or not) and records its
// exit and the fault.
func (e *env) killWaiter(class int, s *slot, id, detail string, start time.Time) {
	p := s.current()
	now := time.Now()
	p.killNow()
	e.rec.Add(history.Event{Kind: history.KindClientExit, Client: id, At: history.Mono(now), Detail: "SIGKILL"})
	e.fault(class, id, detail, start, now)
}

// restartSlots starts new processes in the killed slots after ttl/2.
func (e *env) restartSlots(slots ...*slot) {
	e.restartSlotsAfter(e.spec.TTL/2, slots...)
}

// restartSlotsAfter starts new processes in the killed slots after d.
func (e *env) restartSlotsAfter(d time.Duration, slots ...*slot) {
	time.Sleep(d)
	for _, s := range slots {
		if err := e.startSlot(s, true); err != nil {
			e.logf("restart client: %v", err)
		}
	}
}

// headOfHeld: the waiter heads the queue of a held lock, not reserved yet.
func headOfHeld(st qstate) bool { return st.Rank == 0 && st.Held && st.ReservedFor == "" }

// killHeadWaiter (13): kill the head waiter while a release has reserved
// the lock for it (stopped at the head first, so that it cannot confirm),
// or at once while it heads the queue of a held lock; a new process takes
// its place 200-700 ms later.
func killHeadWaiter(ctx context.Context, e *env) {
	s, id, waiter, ok := e.waitInQueue(ctx, e.procSlots(), headOfHeld)
	if !ok {
		return
	}
	start := time.Now()
	// The new process arrives around the moment the dead head's
	// reservation lapses (ReserveTTL after the release, and no later than
	// the next heartbeat of a live waiter): a newcomer then races the
	// hand-over to the next head.
	respawn := e.between(engine.ReserveTTL-50*time.Millisecond, engine.ReserveTTL+450*time.Millisecond)
	if !e.queueVisible() || e.rng.IntN(2) == 0 {
		e.killWaiter(check.ClassKillHeadWaiter, s, id, "SIGKILL as the head of a held lock", start)
		e.restartSlotsAfter(respawn, s)
		return
	}
	e.pause(s.current(), id)
	// Its entry lives at least WaiterTTL - WaiterTTL/3 after its last
	// heartbeat; the holder releases well before.
	limit := time.Now().Add(distlock.WaiterTTL / 2)
	detail := "SIGSTOP at the head, SIGKILL: no reservation for it within 1.5 s"
	for time.Now().Before(limit) {
		st, err := e.queueState(waiter)
		if err == nil && st.ReservedFor == waiter {
			detail = fmt.Sprintf("SIGSTOP at the head, SIGKILL %v later, while the lock was reserved for it", time.Since(start).Round(time.Millisecond))
			break
		}
		if err == nil && st.Rank < 0 {
			detail = "SIGSTOP at the head, SIGKILL: it left the queue first (granted)"
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.killWaiter(check.ClassKillHeadWaiter, s, id, detail, start)
	e.restartSlotsAfter(respawn, s)
}

// stopHeadWaiter (14): SIGSTOP the head waiter for longer than the
// reservation and WaiterTTL, then SIGCONT.
func stopHeadWaiter(ctx context.Context, e *env) {
	s, id, _, ok := e.waitInQueue(ctx, e.procSlots(), headOfHeld)
	if !ok {
		return
	}
	d := e.between(distlock.WaiterTTL+500*time.Millisecond, distlock.WaiterTTL+1500*time.Millisecond)
	p := s.current()
	start := time.Now()
	e.pause(p, id)
	time.Sleep(d)
	p.signal(syscall.SIGCONT)
	e.fault(check.ClassStopHeadWaiter, id, fmt.Sprintf("SIGSTOP %v at the head of a held lock", d.Round(time.Millisecond)), start, time.Now())
}

// killWaiters (15): SIGKILL a process waiter queued behind the head, and
// the other one too if it is queued behind the head then; new processes
// after ttl/2, and no other kill for WaiterTTL.
func killWaiters(ctx context.Context, e *env) {
	behind := func(st qstate) bool { return st.Rank >= 1 }
	s, id, _, ok := e.waitInQueue(ctx, e.procSlots(), behind)
	if !ok {
		return
	}
	start := time.Now()
	killed := []*slot{s}
	e.killWaiter(check.ClassKillWaiters, s, id, "SIGKILL behind the head", start)
	for _, o := range e.procSlots() {
		oid := o.id()
		if o == s {
			continue
		}
		if st, ok := e.stateOf(oid); ok && behind(st) {
			e.killWaiter(check.ClassKillWaiters, o, oid, "SIGKILL behind the head (the second)", time.Now())
			killed = append(killed, o)
		}
	}
	e.restartSlots(killed...)
	// The dead entries live out their WaiterTTL before the next kill, so
	// that the new processes wait (and are compared) in a live queue too.
	time.Sleep(distlock.WaiterTTL)
}

// restartQueue (16): kill and restart the lock node empty while the lock
// is held and at least two waiters are queued; no other restart for
// WaiterTTL.
func restartQueue(ctx context.Context, e *env) {
	var n int64
	for {
		st, err := e.queueState("")
		if err == nil && st.Held && st.Len >= 2 {
			n = st.Len
			break
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return
		}
	}
	start := time.Now()
	if err := e.nodes[0].Restart(); err != nil {
		e.logf("restart: %v", err)
	}
	e.fault(check.ClassRestartQueue, "node0", fmt.Sprintf("killed, restarted empty at once, %d waiters queued", n), start, time.Now())
	// Every waiter hears of the loss from its next heartbeat and enters
	// again; the rebuilt queue then runs WaiterTTL without a fault (calls
	// made then are compared by I8).
	time.Sleep(distlock.WaiterTTL)
}
