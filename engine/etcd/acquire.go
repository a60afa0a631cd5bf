package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// acquireMutex is Acquire for a mutex. A grant is one transaction that puts the
// lock key on a lease of the request's ttl, under the condition that the
// lock, its reservation and the head of its queue are as read; the lease
// was granted or renewed after the call began, so etcd keeps the key at
// least ttl after the send time the Client counts from. The token is the
// key's CreateRevision.
func (e *Engine) acquireMutex(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(ctx); err != nil {
		return engine.Grant{}, err
	}
	ttl := leaseSeconds(r.TTL)
	g, st, lease, err := e.fastAcquire(ctx, r, ttl)
	if err != nil || g.Acquired {
		return g, err
	}
	if lease == nil {
		lease = e.agedLease(r, ttl)
	}
	if lease == nil {
		// The lease of a new grant is obtained while the state is read.
		lease = newPending(ctx, func(ctx context.Context) (clientv3.LeaseID, error) { return e.obtain(ctx, ttl) })
	}
	defer lease.release(func(id clientv3.LeaseID) { e.recycle(id, ttl) })
	if st == nil && r.Waiter != "" && r.Waiting && !e.heads.knows(r.Name, r.Waiter) {
		if st, err = e.enterQueue(ctx, r); err != nil {
			return engine.Grant{}, err
		}
	}
	for range maxConflicts {
		if st == nil {
			if st, err = e.read(ctx, r.Name); err != nil {
				return engine.Grant{}, err
			}
		}
		if len(st.lapse) > 0 {
			if err := e.settle(ctx, st); err != nil {
				return engine.Grant{}, err
			}
			st = nil
			continue
		}
		var ok bool
		switch {
		case st.shared != 0 && st.lock == nil:
			return engine.Grant{}, engine.KindError(r.Name, st.shared, 0)
		case st.lock != nil && st.hold.Owner != r.Owner:
			g, ok, err = e.refuse(ctx, st, r, engine.Grant{Holder: st.hold.Owner}, nil)
		case st.lock != nil:
			g, ok, err = e.reenter(ctx, st, r, ttl, lease)
		default:
			g, ok, err = e.admit(ctx, st, r, ttl, lease)
		}
		if err != nil {
			return engine.Grant{}, err
		}
		if ok {
			e.noteGrant(r, g)
			return g, nil
		}
		st = nil
	}
	return engine.Grant{}, conflict("acquire", r.Name)
}

// noteGrant keeps the engine's view of its waiters in step with a grant.
func (e *Engine) noteGrant(r engine.AcquireRequest, g engine.Grant) {
	if r.Waiter != "" && g.Acquired {
		e.heads.remove(r.Name, r.Waiter)
		e.dropWaiter(r.Name, r.Waiter)
	}
}

// admit decides on a free lock as engine/memory does: not when it is
// reserved for another waiter, nor when another waiter heads the queue and
// either it is fair or due (see due) or r is fair or asks to stay behind (r
// then queues behind it, and the head is woken and reserved for, so that a
// head that does not come is dropped in time). ok is false when the state
// changed under the transaction.
func (e *Engine) admit(ctx context.Context, st *state, r engine.AcquireRequest, ttl int64, lease *pending) (engine.Grant, bool, error) {
	head, res := st.head(), st.reservedFor()
	behind := res == "" && head != nil && head.id != r.Waiter && (head.Fair || due(head) || r.Order.Yields())
	if behind || (res != "" && res != r.Waiter) {
		g := engine.Grant{Reserved: true, HolderTTL: reserveTTL * time.Second}
		var ops []clientv3.Op
		// The first attempt of a waiting call (not queued yet) leaves the
		// wake-up and the reservation to its next attempt, made at once
		// as a waiter: the head, woken by the release itself, has most
		// likely taken the lock by then, and a reservation now would only
		// make its grant's transaction fail.
		//
		// Nor does a waiter that has just entered the queue behind the
		// head: the release that freed the lock woke the head already,
		// and if the head does not come, the waiter right behind it
		// reserves at its next heartbeat (see reserves).
		if behind && !(r.Waiting && r.Waiter == "") && !st.entered {
			var err error
			if ops, err = e.wakeHead(ctx, st); err != nil {
				return engine.Grant{}, false, err
			}
		}
		return e.refuse(ctx, st, r, g, ops)
	}
	id, err := lease.get()
	if err != nil {
		return engine.Grant{}, false, err
	}
	h := hold{Owner: r.Owner, Count: 1, Attempt: r.Attempt, Metadata: r.Metadata, TTL: ttl}
	cmps := append(st.unchanged(e, r.Waiter),
		clientv3.Compare(clientv3.CreateRevision(e.keys.lock(r.Name)), "=", 0),
		noSharedHolder(e, r.Name), e.noSharedWaiter(e.keys.name(r.Name)))
	ops := append([]clientv3.Op{clientv3.OpPut(e.keys.lock(r.Name), h.encode(), clientv3.WithLease(id))},
		e.grantedOps(st, r.Waiter)...)
	return e.commitGrant(ctx, r.Name, r.Owner, id, ttl, lease, cmps, ops)
}

// reenter counts up a hold of the owner that holds the lock (unless the
// request repeats the attempt of its last grant) and renews its lease, or
// moves the key to a lease of the new ttl (unless keepsLease).
func (e *Engine) reenter(ctx context.Context, st *state, r engine.AcquireRequest, ttl int64, lease *pending) (engine.Grant, bool, error) {
	h := st.hold
	if h.Attempt != r.Attempt {
		h.Count++
		h.Attempt = r.Attempt
	}
	old := clientv3.LeaseID(st.lock.Lease)
	lease.adopt(old) // the key on the call's own lease: a grant whose answer was lost
	id := old
	if h.TTL != ttl && !keepsLease(h.Count, h.TTL, ttl) {
		var err error
		if id, err = lease.get(); err != nil {
			return engine.Grant{}, false, err
		}
		h.TTL = ttl
	}
	sent := time.Now()
	var kept []int64
	var kerr error
	renew := func() {
		if id == old {
			kept, kerr = e.keepAlive(ctx, []clientv3.LeaseID{id})
		}
	}
	var resp *clientv3.TxnResponse
	var unsure bool
	var err error
	both(renew, func() {
		ops := append([]clientv3.Op{clientv3.OpPut(e.keys.lock(r.Name), h.encode(), clientv3.WithLease(id))},
			e.grantedOps(st, r.Waiter)...)
		resp, unsure, err = e.txn(ctx, "acquire "+r.Name, st.unchanged(e, r.Waiter), ops)
	})
	if unsure {
		e.taint(id)
	}
	if err != nil {
		return engine.Grant{}, false, err
	}
	if !resp.Succeeded {
		return engine.Grant{}, false, nil
	}
	if ok, err := e.reentered(id, old, lease, kept, kerr, h.TTL, st.hold.TTL, sent); !ok {
		return engine.Grant{}, false, err
	}
	e.wrote(r.Name, r.Owner, engine.Mutex, id, resp.Header.Revision, h.Count, h.TTL, st.lock.CreateRevision)
	g := engine.Grant{Acquired: true, Token: uint64(st.lock.CreateRevision), Count: h.Count}
	if id != old {
		g.Age = lease.age // moved to the call's lease, which may be aged
	}
	return g, true, nil
}

// grantedOps takes waiter out of the queue after a grant: its entry, and a
// reservation or wake-up addressed to it.
func (e *Engine) grantedOps(st *state, waiter string) []clientv3.Op {
	if waiter == "" {
		return nil
	}
	var ops []clientv3.Op
	if st.waiter(waiter) != nil {
		ops = append(ops, clientv3.OpDelete(e.keys.waiter(st.name, waiter)))
	}
	if st.resKV != nil { // ours, or void: no reservation is in effect for another
		ops = append(ops, clientv3.OpDelete(e.keys.res(st.name)))
	}
	if st.wake != nil && string(st.wake.Value) == waiter {
		ops = append(ops, clientv3.OpDelete(e.keys.wake(st.name)))
	}
	return ops
}

// refuse answers a refused request: g with the holder's time left (when
// held), after putting r's waiter in the queue (or renewing its entry) in
// one transaction with ops. The holder's time left is asked alongside, so
// that the transaction compares a state read one round trip ago, not two.
//
// A waiting call's refusal that nobody sleeps on carries the holder's ttl
// instead, an upper bound of its time left, and asks nothing: the first
// attempt (the wait loop tries again at once, as a waiter) and a waiter
// queued behind another (it sleeps until woken).
func (e *Engine) refuse(ctx context.Context, st *state, r engine.AcquireRequest, g engine.Grant, ops []clientv3.Op) (engine.Grant, bool, error) {
	if st.lock == nil {
		return e.enqueue(ctx, st, r, g, ops)
	}
	if r.Waiting && (r.Waiter == "" || len(st.queue) > 0 && st.head().id != r.Waiter) {
		g.HolderTTL = time.Duration(st.hold.TTL) * time.Second
		return e.enqueue(ctx, st, r, g, ops)
	}
	var left time.Duration
	var lerr, err error
	var ok bool
	both(func() { left, lerr = e.timeLeft(ctx, clientv3.LeaseID(st.lock.Lease)) },
		func() { g, ok, err = e.enqueue(ctx, st, r, g, ops) })
	if err == nil {
		err = lerr
	}
	if err != nil || !ok {
		return engine.Grant{}, false, err
	}
	g.HolderTTL = max(left, 0)
	return g, true, nil
}

// enqueue is refuse but for the holder's time left.
func (e *Engine) enqueue(ctx context.Context, st *state, r engine.AcquireRequest, g engine.Grant, ops []clientv3.Op) (engine.Grant, bool, error) {
	if r.Waiter == "" && len(ops) == 0 {
		return g, true, nil
	}
	own := st.waiter(r.Waiter)
	queuing := len(ops) == 0 && own == nil && (st.lock == nil || st.hold.Owner != r.Owner)
	if r.Waiter != "" {
		switch {
		case own != nil && st.entered: // renewed as it was put
		case own != nil:
			sent := time.Now()
			kept, err := e.keepAlive(ctx, []clientv3.LeaseID{clientv3.LeaseID(own.kv.Lease)})
			if err != nil {
				return engine.Grant{}, false, err
			}
			if kept[0] <= 0 {
				return engine.Grant{}, false, nil // expired: read again, re-enter
			}
			e.noteKept(clientv3.LeaseID(own.kv.Lease), kept[0], sent)
		default:
			id, err := e.waiterLease(ctx, r.Name, r.Waiter, leaseSeconds(r.WaiterTTL))
			if err != nil {
				return engine.Grant{}, false, err
			}
			ops = append(ops, clientv3.OpPut(e.keys.waiter(r.Name, r.Waiter),
				mustJSON(entryOf(r)), clientv3.WithLease(id)))
		}
		g.Queued = true
	}
	after := st
	if len(ops) > 0 {
		if r.Waiter != "" { // where the waiter stands, as of the transaction
			ops = append(ops, clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix()))
		}
		cmps := st.unchanged(e, r.Waiter)
		if queuing {
			// Entering the queue, and nothing else: the only comparison
			// is the entry's own (absent); the lock as of the transaction
			// is judged from its read below, so that a grant to the head
			// between the read and this transaction does not fail it.
			cmps = []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.keys.waiter(r.Name, r.Waiter)), "=", 0)}
		}
		resp, _, err := e.txn(ctx, "queue on "+r.Name, cmps, ops)
		if err != nil {
			return engine.Grant{}, false, err
		}
		if !resp.Succeeded {
			return engine.Grant{}, false, nil
		}
		if r.Waiter != "" {
			rr := resp.Responses[len(resp.Responses)-1].GetResponseRange()
			if after, err = e.decode(r.Name, resp.Header.Revision, rr.Kvs); err != nil {
				return engine.Grant{}, false, err
			}
		}
		if queuing && modRev(after.lock) != modRev(st.lock) {
			return engine.Grant{}, false, nil // the lock changed: decide again, queued
		}
	}
	if r.Waiter != "" {
		pred, queued := after.position(r.Waiter)
		if !queued {
			return engine.Grant{}, false, nil // dropped meanwhile: read again
		}
		g.Head = pred == ""
		e.heads.entered(r.Name, r.Waiter, after.waiter(r.Waiter).kv.CreateRevision)
		if e.heads.set(r.Name, r.Waiter, pred, after.rev) {
			return engine.Grant{}, false, nil // a wake-up went by meanwhile: decide again
		}
	}
	return g, true, nil
}

// wakeHead returns the operations that wake the head of a free lock's
// queue: a wake-up addressed to it, and, when it is due, a reservation
// (reserveTTL) that keeps the lock for it. On etcd every head is due unless
// it asked for no reservation (OrderNoReserve): it has waited at least the Raft
// commit of its entry and the one that frees the lock, which is more than
// engine.StarvationBound on any real cluster.
func (e *Engine) wakeHead(ctx context.Context, st *state) ([]clientv3.Op, error) {
	h := st.head()
	if h == nil || st.res != nil || h.kv.Lease == 0 {
		return nil, nil
	}
	due := due(h)
	lease := clientv3.WithLease(clientv3.LeaseID(h.kv.Lease))
	ops := []clientv3.Op{clientv3.OpPut(e.keys.wake(st.name), h.id, lease)}
	if due {
		id, err := e.reservationLease(ctx)
		if err != nil {
			return nil, err
		}
		reserved := h.entry
		reserved.Reserved = true
		ops = append(ops,
			clientv3.OpPut(e.keys.res(st.name), h.id, clientv3.WithLease(id)),
			clientv3.OpPut(string(h.kv.Key), mustJSON(reserved), lease))
	}
	return ops, nil
}

// settle drops the waiters whose reservation lapsed (the head did not take
// the lock in time), as every engine's queue does before it is read.
func (e *Engine) settle(ctx context.Context, st *state) error {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, w := range st.lapse {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(w.kv.Key)), "=", w.kv.ModRevision))
		ops = append(ops, clientv3.OpDelete(string(w.kv.Key)))
	}
	_, _, err := e.txn(ctx, "settle "+st.name, cmps, ops)
	return err
}

// due reports whether a head is owed the lock ahead of newcomers: a fair
// one, and every one that did not ask for no reservation (OrderNoReserve), since
// on etcd every head has waited longer than engine.StarvationBound (the Raft
// commit of its entry and the one that freed the lock, at least).
func due(h *waiterKV) bool { return h.Fair || !h.NoReserve }

// noSharedHolder holds while nobody holds the name as a shared lock: a
// mutex is not granted beside a semaphore's or reader-writer lock's holders
// (nor they beside it: see sharedState.unchanged); a grant compares
// noSharedWaiter too (queued waiters bind the name to their kind).
func noSharedHolder(e *Engine, name string) clientv3.Cmp {
	return e.noHolder(e.keys.name(name))
}

// keepsLease reports whether an owner's holds (count after the request)
// on a lease of leaseTTL seconds stay on it, renewed, when asked for ttl
// seconds: a shorter ttl while the owner holds the lock more than once
// (engine.HoldExpiry). The lease then ends leaseTTL from now, no earlier
// than before, nor than ttl from now, so no lease of the owner outlives
// the key; otherwise the key moves to a lease of ttl.
func keepsLease(count int, leaseTTL, ttl int64) bool { return count > 1 && ttl < leaseTTL }

// reentered settles the lease of a re-entry whose transaction succeeded:
// the key's own lease (id == old), renewed in the same round trip, must
// have been alive (else ok is false: read again); a new lease (for a new
// ttl) is taken from pending and the old one recycled.
func (e *Engine) reentered(id, old clientv3.LeaseID, lease *pending, kept []int64, kerr error, ttl, oldTTL int64, sent time.Time) (ok bool, err error) {
	if id != old {
		lease.take()
		e.recycle(old, oldTTL)
		return true, nil
	}
	if kerr != nil {
		return false, kerr
	}
	if kept[0] <= 0 {
		return false, nil // the lease expired: read again
	}
	e.noteKept(id, ttl, sent)
	return true, nil
}

// commitGrant commits a first grant of name to owner on lease id: the
// token is the transaction's revision. False when the state changed since
// it was read (cmps failed); a lease the outcome of whose transaction is
// unknown is tainted.
func (e *Engine) commitGrant(ctx context.Context, name, owner string, id clientv3.LeaseID, ttl int64, lease *pending, cmps []clientv3.Cmp, ops []clientv3.Op) (engine.Grant, bool, error) {
	resp, unsure, err := e.txn(ctx, "acquire "+name, cmps, ops)
	if unsure {
		e.taint(id)
	}
	if err != nil {
		if lease.age > 0 && errors.Is(err, rpctypes.ErrLeaseNotFound) {
			e.forget(id) // an aged lease etcd no longer has: never pooled again
			lease.take()
		}
		return engine.Grant{}, false, err
	}
	if !resp.Succeeded {
		return engine.Grant{}, false, nil
	}
	lease.take()
	e.wrote(name, owner, engine.Mutex, id, resp.Header.Revision, 1, ttl, resp.Header.Revision)
	return engine.Grant{Acquired: true, Token: uint64(resp.Header.Revision), Count: 1, Age: lease.age}, true, nil
}
