package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// waiterRef names one waiter of one lock.
type waiterRef struct{ name, waiter string }

// waiterLeases remembers the lease of each of this engine's waiters, so
// that a heartbeat renews it while it reads the queue.
type waiterLeases struct {
	mu sync.Mutex
	m  map[waiterRef]waiterLease
}

type waiterLease struct {
	id  clientv3.LeaseID
	ttl int64
}

func (w *waiterLeases) get(ref waiterRef) (waiterLease, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.m[ref]
	return l, ok
}

func (w *waiterLeases) set(ref waiterRef, l waiterLease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[waiterRef]waiterLease)
	}
	w.m[ref] = l
}

func (w *waiterLeases) drop(ref waiterRef) (waiterLease, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.m[ref]
	delete(w.m, ref)
	return l, ok
}

// waiterLease returns a lease for waiter's queue entry: the one it had, if it
// still lives for a while, else a new one.
func (e *Engine) waiterLease(ctx context.Context, name, waiter string, ttl int64) (clientv3.LeaseID, error) {
	ref := waiterRef{name, waiter}
	if l, ok := e.waiters.get(ref); ok && l.ttl == ttl && e.alive(l.id, time.Second) {
		return l.id, nil
	}
	id, err := e.obtain(ctx, ttl)
	if err != nil {
		return 0, err
	}
	e.waiters.set(ref, waiterLease{id, ttl})
	return id, nil
}

// alive reports whether lease id lives at least margin longer, as far as
// this engine renewed it.
func (e *Engine) alive(id clientv3.LeaseID, margin time.Duration) bool {
	e.leaseMu.Lock()
	defer e.leaseMu.Unlock()
	exp, ok := e.kept[id]
	return ok && time.Now().Add(margin).Before(exp)
}

// dropWaiter forgets a waiter that left the queue and recycles its lease.
func (e *Engine) dropWaiter(name, waiter string) {
	if l, ok := e.waiters.drop(waiterRef{name, waiter}); ok {
		e.recycle(l.id, l.ttl)
	}
}

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind) to leaveMutex or leaveShared.
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leaveMutex, e.leaveShared)
}

// leaveMutex is Leave's mutex path: the waiter's entry is deleted (with a
// reservation or wake-up addressed to it). The waiter behind it is woken
// by the deletion, through its engine's watch.
func (e *Engine) leaveMutex(ctx context.Context, r engine.LeaveRequest) error {
	name, waiter := r.Name, r.Waiter
	if err := e.check(ctx); err != nil {
		return err
	}
	e.heads.remove(name, waiter)
	for range maxConflicts {
		st, err := e.read(ctx, name)
		if err != nil {
			return err
		}
		if len(st.lapse) > 0 {
			if err := e.settle(ctx, st); err != nil {
				return err
			}
			continue
		}
		own := st.waiter(waiter)
		if own == nil {
			e.dropWaiter(name, waiter)
			return nil
		}
		ops := []clientv3.Op{clientv3.OpDelete(string(own.kv.Key))}
		if st.reservedFor() == waiter {
			ops = append(ops, clientv3.OpDelete(e.keys.res(name)))
		}
		if st.wake != nil && string(st.wake.Value) == waiter {
			ops = append(ops, clientv3.OpDelete(e.keys.wake(name)))
		}
		// The next waiter learns that it heads the queue from the
		// deletion of this entry (see heads).
		cmps := st.unchanged(e, waiter)
		ok, err := e.commit(ctx, "leave the queue of "+name, cmps, ops...)
		if err != nil {
			return err
		}
		if ok {
			e.dropWaiter(name, waiter)
			return nil
		}
	}
	return conflict("leave the queue of", name)
}

// heads knows where this engine's waiters stand in their queues: the key
// of the waiter before each one ("" for the head). As in etcd's own lock
// recipe, a waiter is woken when the key before it is deleted (that waiter
// left or died), and the head when the lock key is deleted (a release or
// the holder's expiry); a release that reserves the lock or wakes the head
// addresses it by name besides.
type heads struct {
	mu sync.Mutex
	m  map[string]map[string]string // name -> waiter -> key before it
	// res is each name's reservation as this engine's watch last saw it.
	res map[string]seenRes
	// gone is the revision of the latest deletion of each key under each
	// name that this engine's watch delivered: the lock key (lockSuffix)
	// and waiters' entries (see set).
	gone map[string]map[string]int64
	// entries is the CreateRevision of each of this engine's mutex
	// waiters' own entries, as last read (see entered): a waiter that
	// heads its queue, or may, tries the one-transaction grant comparing
	// that no entry is older than its own.
	entries map[waiterRef]int64
}

// entered records the CreateRevision of waiter's own entry in name's
// queue, as read.
func (h *heads) entered(name, waiter string, created int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil || len(h.entries) >= 4096 {
		h.entries = make(map[waiterRef]int64) // a hint: forgetting costs a read at most
	}
	h.entries[waiterRef{name, waiter}] = created
}

// candidate returns the CreateRevision of waiter's entry when this engine
// believes the waiter heads name's queue, or may (has), and knows its
// entry; 0 otherwise.
func (h *heads) candidate(name, waiter string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	pred, ok := h.m[name][waiter]
	if !ok || pred != "" && pred != maybeHead {
		return 0
	}
	return h.entries[waiterRef{name, waiter}]
}

// seenRes is a reservation seen on a watch: its waiter and ModRevision.
type seenRes struct {
	waiter string
	rev    int64
}

// reserved records the reservation of name for waiter put at rev, or, with
// waiter "", its deletion.
func (h *heads) reserved(name, waiter string, rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if waiter == "" {
		delete(h.res, name)
		return
	}
	if h.res == nil {
		h.res = make(map[string]seenRes)
	}
	h.res[name] = seenRes{waiter, rev}
}

// reservation returns the ModRevision of the reservation of name for
// waiter as last seen, 0 when none was seen.
func (h *heads) reservation(name, waiter string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.res[name]; ok && r.waiter == waiter {
		return r.rev
	}
	return 0
}

// set records the key before waiter ("" when it heads the queue), as of
// the state read at revision rev. A deletion this engine's watch delivered
// after rev already had its wake-ups judged without this record: when it
// was the key before waiter, the waiter is recorded as maybe heading the
// queue (the lock's deletion wakes it); when it was the lock key and the
// waiter heads the queue (or may), set reports missed: the waiter must
// look again at once.
func (h *heads) set(name, waiter, pred string, rev int64) (missed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pred != "" && h.gone[name][pred] > rev {
		pred = maybeHead
	}
	missed = (pred == "" || pred == maybeHead) && h.gone[name][lockSuffix] > rev
	if h.m == nil {
		h.m = make(map[string]map[string]string)
	}
	if h.m[name] == nil {
		h.m[name] = make(map[string]string)
	}
	h.m[name][waiter] = pred
	return missed
}

// sawDelete records the deletion of key (lockSuffix for the lock key or a
// shared lock's holder) under name at rev, delivered by the watch, before the wake-ups it causes are
// judged (see set).
func (h *heads) sawDelete(name, key string, rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone == nil || len(h.gone) >= 1024 {
		h.gone = make(map[string]map[string]int64) // a forgotten deletion costs a heartbeat's wait at most
	}
	if h.gone[name] == nil || len(h.gone[name]) >= 1024 {
		h.gone[name] = make(map[string]int64)
	}
	h.gone[name][key] = max(h.gone[name][key], rev)
}

func (h *heads) remove(name, waiter string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.entries, waiterRef{name, waiter})
	delete(h.m[name], waiter)
	if len(h.m[name]) == 0 {
		delete(h.m, name)
	}
}

// maybeHead marks a waiter whose predecessor left: it may head the queue
// now, or stand behind another waiter still.
const maybeHead = "?"

// has reports whether waiter heads its queue, or may.
func (h *heads) has(name, waiter string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	pred, ok := h.m[name][waiter]
	return ok && (pred == "" || pred == maybeHead)
}

// knows reports whether this engine knows where waiter stands.
func (h *heads) knows(name, waiter string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[name][waiter]
	return ok
}

// deleted records that key left name's queue and returns the waiters it
// stood before: they may head the queue now.
func (h *heads) deleted(name, key string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for w, pred := range h.m[name] {
		if pred == key {
			h.m[name][w] = maybeHead
			out = append(out, w)
		}
	}
	return out
}

// lockLeases remembers the locks this engine granted or renewed: the lease,
// so that a renewal renews it while it reads the lock, and the revision and
// hold count of the engine's last write, so that a release of a lock
// nobody waits for is one transaction.
type lockLeases struct {
	mu sync.Mutex
	m  map[waiterRef]lockRef // (name, owner) -> the lock
}

type lockRef struct {
	lease clientv3.LeaseID
	rev   int64 // ModRevision of this engine's last write of the lock key, 0 unknown
	count int
	ttl   int64       // the lease's ttl in seconds
	token int64       // the grant's token (its key's CreateRevision), 0 unknown
	kind  engine.Kind // the kind of the hold written (with rev)
}

// of reports whether l is a write of the grant of token (0: any).
func (l lockRef) of(token uint64) bool {
	return token == 0 || uint64(l.token) == token
}

// lockWrite returns what this engine knows of owner's hold of name.
func (e *Engine) lockWrite(name, owner string) (lockRef, bool) {
	e.locks.mu.Lock()
	defer e.locks.mu.Unlock()
	l, ok := e.locks.m[waiterRef{name, owner}]
	return l, ok && l.rev != 0
}

// setLockLease records (or, with NoLease, forgets) the lease of owner's
// hold of name.
func (e *Engine) setLockLease(name, owner string, id clientv3.LeaseID) {
	e.heldOn(name, owner, id, 0)
}

// heldOn records (or, with NoLease, forgets) the lease of owner's hold of
// name, of the grant of token (0: unknown).
func (e *Engine) heldOn(name, owner string, id clientv3.LeaseID, token int64) {
	e.locks.mu.Lock()
	defer e.locks.mu.Unlock()
	ref := waiterRef{name, owner}
	if id == clientv3.NoLease {
		delete(e.locks.m, ref)
		return
	}
	if e.locks.m == nil {
		e.locks.m = make(map[waiterRef]lockRef)
	}
	l := e.locks.m[ref]
	if l.lease != id || token != 0 && l.token != 0 && l.token != token {
		l = lockRef{lease: id} // (another grant's write: its revision is unknown)
	}
	if token != 0 {
		l.token = token
	}
	e.locks.m[ref] = l
}

// wrote records this engine's write of owner's hold of name, a hold of
// kind, of the grant of token (its key's CreateRevision).
func (e *Engine) wrote(name, owner string, kind engine.Kind, id clientv3.LeaseID, rev int64, count int, ttl, token int64) {
	e.locks.mu.Lock()
	defer e.locks.mu.Unlock()
	if e.locks.m == nil {
		e.locks.m = make(map[waiterRef]lockRef)
	}
	e.locks.m[waiterRef{name, owner}] = lockRef{lease: id, rev: rev, count: count, ttl: ttl, token: token, kind: kind}
}

// lockGuess returns the lease this engine last knew for owner's hold of
// name, to renew it while a renewal naming token (0: any) reads the lock:
// NoLease when none, or when the engine knows that lease to be another
// grant's (a newer grant of the same owner, which the renewal must not
// keep alive).
func (e *Engine) lockGuess(name, owner string, token uint64) clientv3.LeaseID {
	e.locks.mu.Lock()
	defer e.locks.mu.Unlock()
	l := e.locks.m[waiterRef{name, owner}]
	if token != 0 && l.token != 0 && uint64(l.token) != token {
		return clientv3.NoLease
	}
	return l.lease
}

// dropLockLease forgets owner's hold of name if its lease is id (it is
// not another grant's, recorded since).
func (e *Engine) dropLockLease(name, owner string, id clientv3.LeaseID) {
	e.locks.mu.Lock()
	defer e.locks.mu.Unlock()
	ref := waiterRef{name, owner}
	if e.locks.m[ref].lease == id {
		delete(e.locks.m, ref)
	}
}
