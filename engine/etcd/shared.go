package etcd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// Shared locks (engine.Sharer): semaphores and reader-writer locks, with
// the semantics of engine/memory's. A shared lock of NAME keeps, under the
// name's prefix:
//
//	s            the lock's kind and limit, on a lease of its own (configTTL,
//	             renewed by grants and by the holders' renewals)
//	h/OWNER      one holder: weight, holds, attempt, metadata, ttl; on the
//	             holder's own lease, so each holder expires on its own; the
//	             token is the key's CreateRevision
//	sq/WAITER    one waiter: its weight; on the waiter's lease; arrival order
//	             is CreateRevision
//	sw           the waiter last woken by name, on that waiter's lease
//
// Every change is one transaction that compares what its decision rests on
// as of the revision it read: no key under h/ or sq/ was put since (a
// grant, a re-entry, a new waiter; deletions only free permits or move
// waiters up), the kind and limit are as read, and the name is not held as
// a mutex. The queue is strict FIFO with weights: a request is granted only
// when its weight fits in the free permits and nobody is queued ahead of
// it. Only the head is woken (a put of sw naming it), and only when it fits:
// by a release, a grant (the next head: readers queued together are
// granted in a chain), a new limit, or a waiter that left; a holder's
// expiry (its key's deletion) wakes the head through its engine's watch.
const (
	configSuffix      = "s"
	holderSuffix      = "h/"
	sharedQueueSuffix = "sq/"
	sharedWakeSuffix  = "sw"
)

// configTTL is the ttl in seconds of the lease of a shared lock's kind and
// limit: an unused lock's limit is forgotten an hour after its last grant or
// renewal.
const configTTL = 3600

var _ engine.Sharer = (*Engine)(nil)

func (k keyspace) config(name string) string        { return k.name(name) + configSuffix }
func (k keyspace) holders(name string) string       { return k.name(name) + holderSuffix }
func (k keyspace) holder(name, owner string) string { return k.holders(name) + escape(owner) }
func (k keyspace) sharedQueue(name string) string   { return k.name(name) + sharedQueueSuffix }
func (k keyspace) sharedWaiter(name, waiter string) string {
	return k.sharedQueue(name) + escape(waiter)
}
func (k keyspace) sharedWake(name string) string { return k.name(name) + sharedWakeSuffix }

// sharedConfig is the value of a shared lock's s key.
type sharedConfig struct {
	Kind  engine.Kind `json:"k"`
	Limit int         `json:"l"`
}

// sharedHold is the value of a holder's key. Kind and Limit repeat the
// lock's as of the grant, so that a lock whose s key expired while it was
// held keeps its kind.
type sharedHold struct {
	Weight   int         `json:"g"`
	Count    int         `json:"c"`
	Attempt  string      `json:"a,omitempty"`
	Metadata string      `json:"m,omitempty"`
	TTL      int64       `json:"t"` // the ttl of the key's lease, in seconds
	Kind     engine.Kind `json:"k"`
	Limit    int         `json:"l"`
	releases
}

// sharedEntry is the value of a waiter's key.
type sharedEntry struct {
	Weight int `json:"g"`
}

type holderKV struct {
	owner string
	kv    *mvccpb.KeyValue
	sharedHold
}

type sharedWaiterKV struct {
	id string
	kv *mvccpb.KeyValue
	sharedEntry
}

// sharedState is a shared lock as of one revision.
type sharedState struct {
	name  string
	rev   int64
	mutex bool // the name is held as a mutex
	// mutexQueued: live waiters are queued for the name's mutex (a
	// waiter whose reservation lapsed is not one): they bind the name to
	// the mutex, as a holder does.
	mutexQueued bool
	cfg         *mvccpb.KeyValue // nil when absent
	kind        engine.Kind
	limit       int              // 0 when the lock is unknown
	holders     []holderKV       // by token
	queue       []sharedWaiterKV // by arrival
	wake        *mvccpb.KeyValue
}

// readShared returns name's shared state in one linearizable range read.
func (e *Engine) readShared(ctx context.Context, name string) (*sharedState, error) {
	resp, err := e.get(ctx, "read "+name, e.keys.name(name), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return e.decodeShared(name, resp.Header.Revision, resp.Kvs)
}

func (e *Engine) decodeShared(name string, rev int64, kvs []*mvccpb.KeyValue) (*sharedState, error) {
	st := &sharedState{name: name, rev: rev}
	var res string              // the mutex's reservation: its waiter
	var mutexWaiters []waiterKV // the mutex's queue
	for _, kv := range kvs {
		_, rest, ok := e.keys.parse(string(kv.Key))
		if !ok {
			continue
		}
		switch {
		case rest == lockSuffix:
			st.mutex = true
		case rest == resSuffix:
			res = string(kv.Value)
		case strings.HasPrefix(rest, queueSuffix):
			w := waiterKV{id: unescape(rest[len(queueSuffix):]), kv: kv}
			if json.Unmarshal(kv.Value, &w.entry) == nil {
				mutexWaiters = append(mutexWaiters, w)
			}
		case rest == configSuffix:
			var c sharedConfig
			if err := json.Unmarshal(kv.Value, &c); err != nil {
				return nil, fmt.Errorf("etcd: shared lock %q: bad value %q: %w", name, kv.Value, err)
			}
			st.cfg, st.kind, st.limit = kv, c.Kind, c.Limit
		case rest == sharedWakeSuffix:
			st.wake = kv
		case strings.HasPrefix(rest, holderSuffix):
			h := holderKV{owner: unescape(rest[len(holderSuffix):]), kv: kv}
			if err := json.Unmarshal(kv.Value, &h.sharedHold); err != nil {
				return nil, fmt.Errorf("etcd: holder %q of %q: bad value %q: %w", h.owner, name, kv.Value, err)
			}
			st.holders = append(st.holders, h)
		case strings.HasPrefix(rest, sharedQueueSuffix):
			w := sharedWaiterKV{id: unescape(rest[len(sharedQueueSuffix):]), kv: kv}
			if err := json.Unmarshal(kv.Value, &w.sharedEntry); err != nil {
				return nil, fmt.Errorf("etcd: waiter %q of %q: bad value %q: %w", w.id, name, kv.Value, err)
			}
			st.queue = append(st.queue, w)
		}
	}
	slices.SortFunc(st.holders, func(a, b holderKV) int { return cmp.Compare(a.kv.CreateRevision, b.kv.CreateRevision) })
	slices.SortFunc(st.queue, func(a, b sharedWaiterKV) int { return cmp.Compare(a.kv.CreateRevision, b.kv.CreateRevision) })
	for _, w := range mutexWaiters {
		// As state.decode: a waiter marked reserved whose reservation is
		// gone (or names another) lapsed, and is to be dropped.
		if !w.Reserved || res == w.id {
			st.mutexQueued = true
		}
	}
	if st.cfg == nil && len(st.holders) > 0 { // the s key expired under holders
		last := st.holders[len(st.holders)-1]
		st.kind, st.limit = last.Kind, last.Limit
	}
	return st, nil
}

func (st *sharedState) used() int {
	n := 0
	for _, h := range st.holders {
		n += h.Weight
	}
	return n
}

func (st *sharedState) fits(weight int) bool { return weight <= st.limit-st.used() }

// due reports whether the head of the queue, asking for weight permits
// while used are held, has an attempt to make: its weight fits, or it is
// above the limit (a SetLimit shrank it under the head) and never will,
// so its attempt is refused as bad input and it leaves the queue instead
// of holding up the waiters behind it for good.
func (st *sharedState) due(weight, used int) bool {
	return weight <= st.limit-used || weight > st.limit
}

func (st *sharedState) holder(owner string) *holderKV {
	for i := range st.holders {
		if st.holders[i].owner == owner {
			return &st.holders[i]
		}
	}
	return nil
}

func (st *sharedState) head() *sharedWaiterKV {
	if len(st.queue) == 0 {
		return nil
	}
	return &st.queue[0]
}

func (st *sharedState) waiter(id string) *sharedWaiterKV {
	for i := range st.queue {
		if st.queue[i].id == id {
			return &st.queue[i]
		}
	}
	return nil
}

// position returns the key before waiter in the queue ("" for the head) and
// whether waiter is queued.
func (st *sharedState) position(waiter string) (string, bool) {
	for i, w := range st.queue {
		if w.id == waiter {
			if i == 0 {
				return "", true
			}
			return string(st.queue[i-1].kv.Key), true
		}
	}
	return "", false
}

// unchanged returns the comparisons that hold while the state a decision
// rests on is as read: nothing put under h/ or sq/ since the read, the s key
// as read, no mutex.
func (st *sharedState) unchanged(e *Engine) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(e.keys.holders(st.name)), "<", st.rev+1).WithPrefix(),
		clientv3.Compare(clientv3.ModRevision(e.keys.sharedQueue(st.name)), "<", st.rev+1).WithPrefix(),
		clientv3.Compare(clientv3.ModRevision(e.keys.config(st.name)), "=", modRev(st.cfg)),
		clientv3.Compare(clientv3.CreateRevision(e.keys.lock(st.name)), "=", 0),
	}
}

// wakeOps wakes the first waiter of st's queue other than skip when it
// has an attempt to make after used permits are held (due): ops put sw
// naming it on its lease, and cmps, for the same transaction, hold while
// its entry is as read. etcd fails a transaction that puts a key on a
// lease it no longer has (lease not found), and the waiter's lease may
// have ended since the read (its entry is deleted with it); with cmps
// the transaction fails its comparison instead, and the caller reads
// again and finds that waiter gone.
func (e *Engine) wakeOps(st *sharedState, skip string, used int) (cmps []clientv3.Cmp, ops []clientv3.Op) {
	for _, w := range st.queue {
		if w.id == skip {
			continue
		}
		if st.due(w.Weight, used) && w.kv.Lease != 0 {
			return []clientv3.Cmp{modifiedAt(string(w.kv.Key), w.kv.ModRevision)},
				[]clientv3.Op{clientv3.OpPut(e.keys.sharedWake(st.name), w.id, clientv3.WithLease(clientv3.LeaseID(w.kv.Lease)))}
		}
		return nil, nil
	}
	return nil, nil
}

// sharedGrantedOps takes waiter out of the queue after a grant, and wakes
// the next head with wake (wakeOps' operations; none when it is empty) in the
// same transaction. A wake-up key addressed to waiter is deleted, unless
// wake puts the key again.
func (e *Engine) sharedGrantedOps(st *sharedState, waiter string, wake []clientv3.Op) []clientv3.Op {
	if waiter == "" {
		return wake
	}
	var ops []clientv3.Op
	if st.waiter(waiter) != nil {
		ops = append(ops, clientv3.OpDelete(e.keys.sharedWaiter(st.name, waiter)))
	}
	if len(wake) == 0 && st.wake != nil && string(st.wake.Value) == waiter {
		ops = append(ops, clientv3.OpDelete(e.keys.sharedWake(st.name)))
	}
	return append(ops, wake...)
}

// noNewMutexWaiter holds while no waiter entered the name's mutex queue
// since st was read: a shared grant, queue entry or limit is not made
// beside one
// (queued waiters bind the name to their kind).
func (st *sharedState) noNewMutexWaiter(e *Engine) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(e.keys.queue(st.name)), "<", st.rev+1).WithPrefix()
}

// checkKind refuses a request for a lock of another kind or limit.
func (st *sharedState) checkKind(r engine.AcquireRequest) error {
	return engine.CheckShared(r, st.kind, st.limit)
}

func mutexErr(name string, kind engine.Kind) error { return engine.KindError(name, 0, kind) }

// configLease keeps the lease of a shared lock's s key while a call lasts:
// the one read, renewed unless this engine renewed it lately, or a new one
// for a new lock.
type configLease struct {
	id      clientv3.LeaseID
	renewed bool
}

// configOps returns the operations that keep st's kind and limit in its s
// key (cfg), on a lease that lives for configTTL: when the key is absent (a
// new lock, or one whose key expired under holders) it is put on a new
// lease; otherwise its lease is renewed unless this engine renewed it in
// the last half of configTTL.
func (e *Engine) configOps(ctx context.Context, st *sharedState, cfg sharedConfig, cl *configLease) ([]clientv3.Op, error) {
	if st.cfg != nil && st.cfg.Lease != 0 {
		id := clientv3.LeaseID(st.cfg.Lease)
		e.noteConfig(st.name, id)
		if !cl.renewed && !e.alive(id, configTTL*time.Second/2) {
			sent := time.Now()
			if kept, err := e.keepAlive(ctx, []clientv3.LeaseID{id}); err == nil && kept[0] > 0 {
				e.noteKept(id, kept[0], sent)
			}
			cl.renewed = true
		}
		return nil, nil
	}
	if cl.id == clientv3.NoLease {
		sent := time.Now()
		resp, err := e.grant(ctx, "grant a lease", configTTL)
		if err != nil {
			return nil, err
		}
		cl.id = resp.ID
		e.noteKept(resp.ID, configTTL, sent)
	}
	e.noteConfig(st.name, cl.id)
	return []clientv3.Op{clientv3.OpPut(e.keys.config(st.name), mustJSON(cfg), clientv3.WithLease(cl.id))}, nil
}

// configs remembers the lease of each shared lock's s key this engine
// used, so that its holders' renewals renew it too.
type configs struct {
	mu sync.Mutex
	m  map[string]clientv3.LeaseID
}

func (e *Engine) noteConfig(name string, id clientv3.LeaseID) {
	e.cfgs.mu.Lock()
	defer e.cfgs.mu.Unlock()
	if e.cfgs.m == nil {
		e.cfgs.m = make(map[string]clientv3.LeaseID)
	}
	e.cfgs.m[name] = id
}

func (e *Engine) configLeaseOf(name string) clientv3.LeaseID {
	e.cfgs.mu.Lock()
	defer e.cfgs.mu.Unlock()
	return e.cfgs.m[name]
}

// acquireShared is Acquire for a shared kind: a grant is one transaction that
// puts the holder's key on a lease of its own, under the comparisons of
// sharedState.unchanged; the token is the key's CreateRevision, so a writer's
// token is above every earlier reader's and writer's.
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(ctx); err != nil {
		return engine.Grant{}, err
	}
	ttl := leaseSeconds(r.TTL)
	lease := newPending(ctx, func(ctx context.Context) (clientv3.LeaseID, error) { return e.obtain(ctx, ttl) })
	defer lease.release(func(id clientv3.LeaseID) { e.recycle(id, ttl) })
	var cl configLease
	for range maxConflicts {
		st, err := e.readShared(ctx, r.Name)
		if err != nil {
			return engine.Grant{}, err
		}
		g, ok, err := e.tryShared(ctx, st, r, ttl, lease, &cl)
		if err != nil {
			return engine.Grant{}, err
		}
		if ok {
			e.noteGrant(r, g)
			return g, nil
		}
	}
	return engine.Grant{}, conflict("acquire", r.Name)
}

func (e *Engine) tryShared(ctx context.Context, st *sharedState, r engine.AcquireRequest, ttl int64, lease *pending, cl *configLease) (engine.Grant, bool, error) {
	if st.mutex || st.mutexQueued {
		return engine.Grant{}, false, mutexErr(r.Name, r.Kind)
	}
	if st.limit == 0 { // a new lock
		st.kind, st.limit = r.Kind, r.Limit
	}
	if err := st.checkKind(r); err != nil {
		return engine.Grant{}, false, err
	}
	cfg := sharedConfig{Kind: st.kind, Limit: st.limit}
	if h := st.holder(r.Owner); h != nil {
		return e.reenterShared(ctx, st, r, h, ttl, lease, cl, cfg)
	}
	head := st.head()
	ahead := head != nil && head.id != r.Waiter
	if !ahead && st.fits(r.Weight) {
		return e.grantShared(ctx, st, r, ttl, lease, cl, cfg)
	}
	g := engine.Grant{}
	if len(st.holders) == 0 || st.fits(r.Weight) {
		g.Reserved = true // free enough, but kept for the queue
	} else {
		g.Holder = st.holders[0].owner
	}
	left, err := e.soonest(ctx, st)
	if err != nil {
		return engine.Grant{}, false, err
	}
	g.HolderTTL = left
	if r.Waiter == "" {
		return g, true, nil
	}
	return e.queueShared(ctx, st, r, head, g)
}

// grantShared grants r a hold of the shared lock in one transaction (with
// the lock's config and the next head's wake-up, if it fits too); false
// when the state changed since it was read.
func (e *Engine) grantShared(ctx context.Context, st *sharedState, r engine.AcquireRequest, ttl int64, lease *pending, cl *configLease, cfg sharedConfig) (engine.Grant, bool, error) {
	cops, err := e.configOps(ctx, st, cfg, cl)
	if err != nil {
		return engine.Grant{}, false, err
	}
	id, err := lease.get()
	if err != nil {
		return engine.Grant{}, false, err
	}
	h := sharedHold{Weight: r.Weight, Count: 1, Attempt: r.Attempt, Metadata: r.Metadata, TTL: ttl, Kind: st.kind, Limit: st.limit}
	// The next head, if it fits too (its wake-up replaces ours).
	wcmps, wake := e.wakeOps(st, r.Waiter, st.used()+r.Weight)
	cmps := append(st.unchanged(e), clientv3.Compare(clientv3.CreateRevision(e.keys.holder(r.Name, r.Owner)), "=", 0),
		st.noNewMutexWaiter(e))
	cmps = append(cmps, wcmps...)
	ops := append([]clientv3.Op{clientv3.OpPut(e.keys.holder(r.Name, r.Owner), mustJSON(h), clientv3.WithLease(id))}, cops...)
	ops = append(ops, e.sharedGrantedOps(st, r.Waiter, wake)...)
	return e.commitGrant(ctx, r.Name, r.Owner, id, ttl, lease, cmps, ops)
}

// queueShared queues r's waiter (or keeps it queued, renewing its lease),
// and wakes the head if it fits (a head whose wake-up was lost, or whose
// predecessor died); g is the refusal so far. False when the state changed
// since it was read, or the waiter's entry expired.
func (e *Engine) queueShared(ctx context.Context, st *sharedState, r engine.AcquireRequest, head *sharedWaiterKV, g engine.Grant) (engine.Grant, bool, error) {
	var ops []clientv3.Op
	own := st.waiter(r.Waiter)
	if own != nil {
		sent := time.Now()
		kept, err := e.keepAlive(ctx, []clientv3.LeaseID{clientv3.LeaseID(own.kv.Lease)})
		if err != nil {
			return engine.Grant{}, false, err
		}
		if kept[0] <= 0 {
			return engine.Grant{}, false, nil // expired: read again, re-enter
		}
		e.noteKept(clientv3.LeaseID(own.kv.Lease), kept[0], sent)
	} else {
		id, err := e.waiterLease(ctx, r.Name, r.Waiter, leaseSeconds(r.WaiterTTL))
		if err != nil {
			return engine.Grant{}, false, err
		}
		ops = append(ops, clientv3.OpPut(e.keys.sharedWaiter(r.Name, r.Waiter),
			mustJSON(sharedEntry{Weight: r.Weight}), clientv3.WithLease(id)))
	}
	var wcmps []clientv3.Cmp
	if head != nil && head.id != r.Waiter && (st.wake == nil || string(st.wake.Value) != head.id) {
		var wake []clientv3.Op
		wcmps, wake = e.wakeOps(st, r.Waiter, st.used())
		ops = append(ops, wake...)
	}
	g.Queued = true
	after := st
	if len(ops) > 0 {
		cmps := append(st.unchanged(e),
			clientv3.Compare(clientv3.ModRevision(e.keys.sharedWaiter(r.Name, r.Waiter)), "=", modRev(kvOf(own))),
			st.noNewMutexWaiter(e))
		cmps = append(cmps, wcmps...)
		ops = append(ops, clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix()))
		resp, _, err := e.txn(ctx, "queue on "+r.Name, cmps, ops)
		if err != nil {
			return engine.Grant{}, false, err
		}
		if !resp.Succeeded {
			return engine.Grant{}, false, nil
		}
		rr := resp.Responses[len(resp.Responses)-1].GetResponseRange()
		if after, err = e.decodeShared(r.Name, resp.Header.Revision, rr.Kvs); err != nil {
			return engine.Grant{}, false, err
		}
	}
	pred, queued := after.position(r.Waiter)
	if !queued {
		return engine.Grant{}, false, nil
	}
	g.Head = pred == ""
	if e.heads.set(r.Name, r.Waiter, pred, after.rev) {
		return engine.Grant{}, false, nil // a wake-up went by meanwhile: decide again
	}
	return g, true, nil
}

func kvOf(w *sharedWaiterKV) *mvccpb.KeyValue {
	if w == nil {
		return nil
	}
	return w.kv
}

// reenterShared counts up a hold of an owner that holds the lock with the
// same weight (unless the request repeats its last attempt) and renews its
// lease, or moves its key to a lease of the new ttl (unless keepsLease).
func (e *Engine) reenterShared(ctx context.Context, st *sharedState, r engine.AcquireRequest, hk *holderKV, ttl int64, lease *pending, cl *configLease, cfg sharedConfig) (engine.Grant, bool, error) {
	if hk.Weight != r.Weight {
		if st.kind == engine.RWLock {
			return engine.Grant{}, false, engine.ErrUpgrade
		}
		return engine.Grant{}, false, engine.HeldWeightError(r.Name, hk.Weight, r.Weight)
	}
	cops, err := e.configOps(ctx, st, cfg, cl)
	if err != nil {
		return engine.Grant{}, false, err
	}
	h := hk.sharedHold
	if h.Attempt != r.Attempt {
		h.Count++
		h.Attempt = r.Attempt
	}
	old := clientv3.LeaseID(hk.kv.Lease)
	lease.adopt(old) // the key on the call's own lease: a grant whose answer was lost
	id := old
	if h.TTL != ttl && !keepsLease(h.Count, h.TTL, ttl) {
		if id, err = lease.get(); err != nil {
			return engine.Grant{}, false, err
		}
		h.TTL = ttl
	}
	key := e.keys.holder(r.Name, r.Owner)
	sent := time.Now()
	var kept []int64
	var kerr error
	var resp *clientv3.TxnResponse
	var unsure bool
	both(func() {
		if id == old {
			kept, kerr = e.keepAlive(ctx, []clientv3.LeaseID{id})
		}
	}, func() {
		cmps := append(st.unchanged(e), clientv3.Compare(clientv3.ModRevision(key), "=", hk.kv.ModRevision))
		ops := append([]clientv3.Op{clientv3.OpPut(key, mustJSON(h), clientv3.WithLease(id))}, cops...)
		ops = append(ops, e.sharedGrantedOps(st, r.Waiter, nil)...) // wakes nobody: the permits in use stay the same
		resp, unsure, err = e.txn(ctx, "acquire "+r.Name, cmps, ops)
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
	if ok, err := e.reentered(id, old, lease, kept, kerr, h.TTL, hk.TTL, sent); !ok {
		return engine.Grant{}, false, err
	}
	e.wrote(r.Name, r.Owner, r.Kind, id, resp.Header.Revision, h.Count, h.TTL, hk.kv.CreateRevision)
	return engine.Grant{Acquired: true, Token: uint64(hk.kv.CreateRevision), Count: h.Count}, true, nil
}

// soonest returns the time left of the holder whose lease ends first
// (engine.ReserveTTL when nobody holds: the head is due to take it), asking
// etcd for every holder's lease at once.
func (e *Engine) soonest(ctx context.Context, st *sharedState) (time.Duration, error) {
	lefts, err := e.holderTTLs(ctx, st)
	if err != nil {
		return 0, err
	}
	d := time.Duration(-1)
	for _, left := range lefts {
		if left >= 0 && (d < 0 || left < d) {
			d = left
		}
	}
	if d < 0 {
		return engine.ReserveTTL, nil
	}
	return d, nil
}

// holderTTLs returns each holder's time left (-1 for one whose lease is
// gone), concurrently.
func (e *Engine) holderTTLs(ctx context.Context, st *sharedState) ([]time.Duration, error) {
	lefts := make([]time.Duration, len(st.holders))
	errs := make([]error, len(st.holders))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, h := range st.holders {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			lefts[i], errs[i] = e.timeLeft(ctx, clientv3.LeaseID(h.kv.Lease))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return lefts, nil
}

// releaseShared is Release for a shared kind: one hold of owner is dropped; the
// last one deletes its key and, in the same transaction, wakes the head of
// the queue when it fits now. With r.Token (not 0), only a hold of that
// grant (the holder key's CreateRevision) is dropped: a newer grant of the
// owner answers NotOwner.
func (e *Engine) releaseShared(ctx context.Context, r engine.ReleaseRequest, rel string) (engine.ReleaseResult, error) {
	if err := e.check(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	st, done, gone, err := e.fastReleaseShared(ctx, r.Name, r.Owner, r.Kind, r.Token)
	if err != nil {
		return engine.ReleaseResult{}, err
	}
	if done {
		return engine.ReleaseResult{Status: engine.Released}, nil
	}
	for range maxConflicts {
		if st == nil {
			if st, err = e.readShared(ctx, r.Name); err != nil {
				return engine.ReleaseResult{}, err
			}
		}
		h := st.holder(r.Owner)
		newer := h != nil && r.Token != 0 && uint64(h.kv.CreateRevision) != r.Token
		switch {
		case h == nil && gone != nil: // as Release: this call's deletion, likely
			e.setLockLease(r.Name, r.Owner, clientv3.NoLease)
			e.recycle(gone.lease, gone.ttl)
			return engine.ReleaseResult{Status: engine.Released}, nil
		case newer && gone != nil: // as releaseRead: the grant gone was of r.Token
			e.dropLockLease(r.Name, r.Owner, gone.lease)
			e.recycle(gone.lease, gone.ttl)
			return engine.ReleaseResult{Status: engine.Released}, nil
		case h == nil:
			e.setLockLease(r.Name, r.Owner, clientv3.NoLease)
			return engine.ReleaseResult{Status: engine.NotHeld}, nil
		case newer: // a newer grant of the owner, left as it is
			return engine.ReleaseResult{Status: engine.NotOwner}, nil
		case h.Kind != r.Kind: // a permit released as a reader, or the reverse
			return engine.ReleaseResult{}, engine.KindError(r.Name, h.Kind, r.Kind)
		case h.has(rel):
			return engine.ReleaseResult{Status: engine.Released, Remaining: h.Count}, nil
		}
		key := e.keys.holder(r.Name, r.Owner)
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", h.kv.ModRevision)}
		if h.Count > 1 {
			hold := h.sharedHold
			hold.Count--
			hold.releases = hold.with(rel)
			ok, err := e.commit(ctx, "release "+r.Name, cmps,
				clientv3.OpPut(key, mustJSON(hold), clientv3.WithLease(clientv3.LeaseID(h.kv.Lease))))
			if err != nil {
				return engine.ReleaseResult{}, err
			}
			if ok {
				return engine.ReleaseResult{Status: engine.Released, Remaining: hold.Count}, nil
			}
			st = nil
			continue
		}
		wcmps, wake := e.wakeOps(st, "", st.used()-h.Weight)
		cmps = append(cmps,
			clientv3.Compare(clientv3.ModRevision(e.keys.sharedQueue(r.Name)), "<", st.rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(e.keys.config(r.Name)), "=", modRev(st.cfg)))
		cmps = append(cmps, wcmps...)
		ops := append([]clientv3.Op{clientv3.OpDelete(key)}, wake...)
		ok, unsure, err := e.commitUnsure(ctx, "release "+r.Name, cmps, ops...)
		if unsure {
			gone = &lockRef{lease: clientv3.LeaseID(h.kv.Lease), ttl: h.TTL}
		}
		if err != nil {
			return engine.ReleaseResult{}, err
		}
		if ok {
			e.setLockLease(r.Name, r.Owner, clientv3.NoLease)
			e.recycle(clientv3.LeaseID(h.kv.Lease), h.TTL)
			return engine.ReleaseResult{Status: engine.Released}, nil
		}
		st = nil
	}
	return engine.ReleaseResult{}, conflict("release", r.Name)
}

// fastReleaseShared drops a hold of kind this engine granted (one hold, its key
// unchanged since) in one transaction when nobody waits (so nobody is to be
// woken); otherwise the transaction reads the name's keys, which it returns
// as st for the full decision. gone and token: as fastRelease's.
func (e *Engine) fastReleaseShared(ctx context.Context, name, owner string, kind engine.Kind, token uint64) (st *sharedState, done bool, gone *lockRef, err error) {
	l, ok := e.lockWrite(name, owner)
	if !ok || l.count != 1 || !l.of(token) || l.kind != kind {
		return nil, false, nil, nil
	}
	key := e.keys.holder(name, owner)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", l.rev),
		clientv3.Compare(clientv3.Version(e.keys.sharedQueue(name)), "=", 0).WithPrefix(),
	}
	if token != 0 {
		cmps = append(cmps, createdIs(key, "", pb.Compare_EQUAL, int64(token)))
	}
	resp, unsure, err := e.txn(ctx, "release "+name, cmps,
		[]clientv3.Op{clientv3.OpDelete(key)}, clientv3.OpGet(e.keys.name(name), clientv3.WithPrefix()))
	if unsure {
		gone = &l
	}
	if err != nil {
		return nil, false, gone, err
	}
	if resp.Succeeded {
		e.setLockLease(name, owner, clientv3.NoLease)
		e.recycle(l.lease, l.ttl)
		return nil, true, nil, nil
	}
	st, err = e.decodeShared(name, resp.Header.Revision, resp.Responses[0].GetResponseRange().Kvs)
	return st, false, gone, err
}

// inspectShared reads name's keys and describes its shared lock.
func (e *Engine) inspectShared(ctx context.Context, name string) (engine.Info, error) {
	st, err := e.readShared(ctx, name)
	if err != nil {
		return engine.Info{}, err
	}
	return e.sharedInfo(ctx, st)
}

// sharedInfo describes the shared lock whose keys st holds, with each
// holder's lease time to live (whole seconds, rounded up).
func (e *Engine) sharedInfo(ctx context.Context, st *sharedState) (engine.Info, error) {
	info := engine.Info{Name: st.name, Waiters: len(st.queue), Queue: listQueue(st.queue, func(w sharedWaiterKV) string { return w.id })}
	if st.limit == 0 {
		return info, nil
	}
	info.Kind, info.Limit = st.kind, st.limit
	lefts, err := e.holderTTLs(ctx, st)
	if err != nil {
		return engine.Info{}, err
	}
	for i, h := range st.holders {
		if lefts[i] < 0 { // expired between the reads
			continue
		}
		token := uint64(h.kv.CreateRevision)
		info.Holders = append(info.Holders, engine.Holder{Owner: h.owner, Count: h.Count, Token: token,
			TTL: lefts[i], Metadata: h.Metadata, Weight: h.Weight})
		info.Token = max(info.Token, token)
	}
	info.Held = len(info.Holders) > 0
	info.HighWater = info.Token
	return info, nil
}

// SetLimit implements engine.Sharer.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	var cl configLease
	for range maxConflicts {
		st, err := e.readShared(ctx, name)
		if err != nil {
			return 0, err
		}
		if st.mutex || st.mutexQueued {
			return 0, mutexErr(name, engine.Semaphore)
		}
		prev := st.limit
		if prev != 0 && st.kind != engine.Semaphore {
			return 0, engine.KindError(name, st.kind, engine.Semaphore)
		}
		cfg := sharedConfig{Kind: engine.Semaphore, Limit: limit}
		if st.cfg == nil && cl.id == clientv3.NoLease {
			if _, err := e.configOps(ctx, st, cfg, &cl); err != nil {
				return 0, err
			}
		}
		id := cl.id
		if st.cfg != nil {
			id = clientv3.LeaseID(st.cfg.Lease)
		}
		st.limit = limit
		wcmps, wake := e.wakeOps(st, "", st.used())
		ops := append([]clientv3.Op{clientv3.OpPut(e.keys.config(name), mustJSON(cfg), clientv3.WithLease(id))}, wake...)
		cmps := append(st.unchanged(e), st.noNewMutexWaiter(e))
		ok, err := e.commit(ctx, "set the limit of "+name, append(cmps, wcmps...), ops...)
		if err != nil {
			return 0, err
		}
		if ok {
			e.noteConfig(name, id)
			return prev, nil
		}
	}
	return 0, conflict("set the limit of", name)
}

// leaveShared is Leave's path for a shared lock's waiter: the waiter's
// key is deleted, and the next head is woken when it fits (the waiter
// behind it is woken by the deletion besides, through its engine's
// watch).
func (e *Engine) leaveShared(ctx context.Context, r engine.LeaveRequest) error {
	name, waiter := r.Name, r.Waiter
	if err := e.check(ctx); err != nil {
		return err
	}
	e.heads.remove(name, waiter)
	for range maxConflicts {
		st, err := e.readShared(ctx, name)
		if err != nil {
			return err
		}
		own := st.waiter(waiter)
		if own == nil {
			e.dropWaiter(name, waiter)
			return nil
		}
		ops := []clientv3.Op{clientv3.OpDelete(string(own.kv.Key))}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(string(own.kv.Key)), "=", own.kv.ModRevision)}
		var wcmps []clientv3.Cmp
		var wake []clientv3.Op
		if st.head().id == waiter {
			wcmps, wake = e.wakeOps(st, waiter, st.used())
		}
		if len(wake) == 0 && st.wake != nil && string(st.wake.Value) == waiter {
			ops = append(ops, clientv3.OpDelete(e.keys.sharedWake(name)))
		}
		ops = append(ops, wake...)
		ok, err := e.commit(ctx, "leave the queue of "+name, append(cmps, wcmps...), ops...)
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

// sharedHeartbeat judges a shared lock's waiter's heartbeat: Extended
// while it is queued, with Wake when it heads the queue and fits, or when
// a wake-up went by while its place was being recorded (heads.set).
func (e *Engine) sharedHeartbeat(r engine.ExtendRequest, rev int64, kvs []*mvccpb.KeyValue) engine.ExtendResult {
	st, err := e.decodeShared(r.Name, rev, kvs)
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	pred, queued := st.position(r.Owner)
	if !queued {
		e.heads.remove(r.Name, r.Owner)
		return engine.ExtendResult{Status: engine.Missing}
	}
	missed := e.heads.set(r.Name, r.Owner, pred, rev)
	return engine.ExtendResult{Status: engine.Extended, Wake: missed || pred == "" && !st.mutex && st.due(st.head().Weight, st.used())}
}

// checkSharedHold judges a shared holder's renewal by its key: as
// checkHold, its CreateRevision is the token r names (unless 0).
func (e *Engine) checkSharedHold(r engine.ExtendRequest, kvs []*mvccpb.KeyValue) engine.ExtendResult {
	if len(kvs) == 0 {
		e.setLockLease(r.Name, r.Owner, clientv3.NoLease)
		return engine.ExtendResult{Status: engine.Missing}
	}
	token := uint64(kvs[0].CreateRevision)
	if r.Token != 0 && token != r.Token {
		return engine.ExtendResult{Status: engine.HeldByOther, Token: token} // a newer grant of the owner
	}
	return engine.ExtendResult{Status: engine.Extended, Token: token}
}

// moveSharedLease puts a holder's key again on a new lease of r's ttl, if
// it is unchanged since it was read (putOnNewLease).
func (e *Engine) moveSharedLease(ctx context.Context, r engine.ExtendRequest, kv *mvccpb.KeyValue) engine.ExtendResult {
	var h sharedHold
	if err := json.Unmarshal(kv.Value, &h); err != nil {
		return engine.ExtendResult{Err: err}
	}
	return e.putOnNewLease(ctx, r, kv, h.TTL, func(ttl int64) string {
		h.TTL = ttl
		return mustJSON(h)
	})
}

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind) to acquireMutex or acquireShared.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return engine.AcquireByKind(ctx, r, e.acquireMutex, e.acquireShared)
}

// Release implements engine.Engine: ReleaseOnce with an id of its own.
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.ReleaseOnce(ctx, r, releaseMark())
}

// ReleaseOnce implements engine.OnceReleaser: every kind of lock,
// dispatched once on r.Kind (engine.ReleaseOnceByKind) to releaseMutex or
// releaseShared. A hold's count-down records id (releases), so a copy of
// it (a Client resending a release whose answer was lost) drops no second
// hold. A release that finds nothing of the owner while a force-release's
// mark stands is answered NotOwner (taken over).
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if id == "" {
		id = releaseMark() // "" would match a hold never counted down
	}
	res, err := engine.ReleaseOnceByKind(ctx, r, id, e.releaseMutex, e.releaseShared)
	if err != nil || res.Status != engine.NotHeld {
		return res, err
	}
	// Freed by a force-release whose mark stands: taken over, as a
	// renewal is told (takenOver; one read, on this path only).
	out := []engine.ExtendResult{{Status: engine.Missing}}
	e.takenOver(ctx, []engine.ExtendRequest{{Name: r.Name, Owner: r.Owner}}, out)
	if out[0].Status == engine.HeldByOther {
		res.Status = engine.NotOwner
	}
	return res, nil
}
