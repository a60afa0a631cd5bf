package etcd

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// fastAcquire tries a grant in one round trip, when the engine has a lease
// of the ttl at hand (renewed in the same round trip): a transaction that
// puts the lock key if the lock is free and either nobody waits or, for a
// waiter that heads the queue, the lock is reserved for it. Otherwise the
// transaction reads the name's keys, which it returns as st for the full
// decision, with the lease (nil when none was at hand).
//
// A waiter's attempt skips it unless the waiter heads the queue, or may
// (its predecessor left or was granted), and its entry's CreateRevision is
// known: the transaction then compares that no entry in the queue is older
// than the waiter's own (it heads the queue) instead of an empty queue. A
// waiter's other attempts follow a refusal, so the queue is most likely
// not empty, and the transaction would fail; the full decision reads first.
//
// So does a first attempt on a name this engine saw waiters queued for
// within busyFor (and not an empty queue since): the transaction would
// most likely fail on that queue, a write for nothing; a read does.
func (e *Engine) fastAcquire(ctx context.Context, r engine.AcquireRequest, ttl int64) (engine.Grant, *state, *pending, error) {
	var entry int64 // the waiter's entry, when it heads the queue or may
	if r.Waiter != "" {
		if entry = e.heads.candidate(r.Name, r.Waiter); entry == 0 {
			return engine.Grant{}, nil, nil, nil
		}
	} else if e.busy.recent(r.Name) {
		return engine.Grant{}, nil, nil, nil
	}
	p, ok := e.pool.takeLease(ttl)
	if !ok {
		return engine.Grant{}, nil, nil, nil
	}
	if age, fresh := p.age(ttl, time.Now()); fresh && r.Aged {
		return e.agedAcquire(ctx, r, ttl, p, age, entry)
	}
	id := p.id
	lockKey := e.keys.lock(r.Name)
	cmps, ops := e.fastGrantTxn(r, id, ttl, entry)
	sent := time.Now()
	var kept []int64
	var kerr error
	var resp *clientv3.TxnResponse
	var unsure bool
	var err error
	both(func() { kept, kerr = e.keepAlive(ctx, []clientv3.LeaseID{id}) }, func() {
		resp, unsure, err = e.txn(ctx, "acquire "+r.Name, cmps, ops,
			clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix()))
	})
	leaseAlive := kerr == nil && kept[0] > 0
	if leaseAlive {
		e.noteKept(id, kept[0], sent)
	}
	if unsure {
		e.taint(id)
	}
	// A lease the lock key may be on (an attempt applied without an
	// answer, or to be applied late) is tainted: the call that goes on
	// takes it as its own if the key is there; recycled, it is revoked.
	if err != nil {
		if leaseAlive || unsure {
			e.recycle(id, ttl)
		}
		return engine.Grant{}, nil, nil, err
	}
	if !resp.Succeeded {
		st, err := e.decode(r.Name, resp.Header.Revision, resp.Responses[0].GetResponseRange().Kvs)
		if err != nil {
			return engine.Grant{}, nil, nil, err
		}
		if !leaseAlive {
			return engine.Grant{}, st, nil, nil
		}
		return engine.Grant{}, st, resolved(id), nil
	}
	if kerr != nil { // granted, but the renewal's answer was lost: renew again
		sent = time.Now()
		kept, kerr = e.keepAlive(ctx, []clientv3.LeaseID{id})
		if kerr == nil && kept[0] > 0 {
			e.noteKept(id, kept[0], sent)
		}
	}
	if kerr != nil || kept[0] <= 0 {
		// The lease may expire before the time the Client counts on:
		// undo the grant (best effort; it expires with the lease anyway).
		_, _ = e.commit(ctx, "undo acquire "+r.Name,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(lockKey), "=", resp.Header.Revision)},
			clientv3.OpDelete(lockKey))
		if kerr == nil {
			kerr = backendErr("acquire "+r.Name, errLeaseLost)
		}
		return engine.Grant{}, nil, nil, kerr
	}
	e.wrote(r.Name, r.Owner, engine.Mutex, id, resp.Header.Revision, 1, ttl, resp.Header.Revision)
	g := engine.Grant{Acquired: true, Token: uint64(resp.Header.Revision), Count: 1}
	e.noteGrant(r, g)
	return g, nil, nil, nil
}

// agedAcquire is fastAcquire on a pooled lease renewed so recently (see
// pooled.age) that it carries the key without a renewal: one request, the
// transaction. The grant reports the lease's age (engine.Grant.Age), from
// which the caller (AcquireRequest.Aged) counts its validity, so etcd
// keeps the key past the caller's deadline as when the lease is renewed
// in the grant's round trip. A refusal hands the lease back to the pool
// (the call goes on with a renewed lease); a lease etcd no longer has
// (revoked by an admin, say) is dropped and the call goes on without it.
func (e *Engine) agedAcquire(ctx context.Context, r engine.AcquireRequest, ttl int64, p pooled, age time.Duration, entry int64) (engine.Grant, *state, *pending, error) {
	e.keep(p.id, p.expiry)
	cmps, ops := e.fastGrantTxn(r, p.id, ttl, entry)
	resp, unsure, err := e.txn(ctx, "acquire "+r.Name, cmps, ops,
		clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix()))
	if unsure {
		e.taint(p.id) // see fastAcquire: recycled, it is revoked
	}
	switch {
	case err != nil && errors.Is(err, rpctypes.ErrLeaseNotFound):
		e.forget(p.id) // gone: nothing to pool or revoke
		return engine.Grant{}, nil, nil, nil
	case err != nil:
		e.recycle(p.id, ttl)
		return engine.Grant{}, nil, nil, err
	case !resp.Succeeded && unsure:
		// The key may be on the lease (an attempt applied without an
		// answer): the call goes on with the lease, renewed now, so that
		// it finds its own grant there (see fastAcquire).
		st, err := e.decode(r.Name, resp.Header.Revision, resp.Responses[0].GetResponseRange().Kvs)
		sent := time.Now()
		kept, kerr := e.keepAlive(ctx, []clientv3.LeaseID{p.id})
		if err != nil || kerr != nil || kept[0] <= 0 {
			e.recycle(p.id, ttl)
			return engine.Grant{}, st, nil, err
		}
		e.noteKept(p.id, kept[0], sent)
		return engine.Grant{}, st, resolved(p.id), nil
	case !resp.Succeeded:
		e.recycle(p.id, ttl)
		st, err := e.decode(r.Name, resp.Header.Revision, resp.Responses[0].GetResponseRange().Kvs)
		return engine.Grant{}, st, nil, err
	}
	e.wrote(r.Name, r.Owner, engine.Mutex, p.id, resp.Header.Revision, 1, ttl, resp.Header.Revision)
	g := engine.Grant{Acquired: true, Token: uint64(resp.Header.Revision), Count: 1, Age: age}
	e.noteGrant(r, g)
	return g, nil, nil, nil
}

// agedLease returns, for a request that counts its grant's age (Aged), a
// pooled lease renewed less than a tenth of its ttl ago, taken as it is
// (see pooled.age); nil when there is none.
func (e *Engine) agedLease(r engine.AcquireRequest, ttl int64) *pending {
	if !r.Aged {
		return nil
	}
	p, ok := e.pool.takeLease(ttl)
	if !ok {
		return nil
	}
	age, fresh := p.age(ttl, time.Now())
	if !fresh {
		e.pool.put(p.id, ttl, p.expiry) // renewed when taken by obtain
		return nil
	}
	e.keep(p.id, p.expiry)
	l := resolved(p.id)
	l.age = age
	return l
}

// fastGrantTxn is the transaction of a fast grant on lease id: the lock
// key put when the lock is free and no shared holder exists, and the queue
// empty and unreserved, or, for a waiter whose entry (CreateRevision
// entry, not 0) heads the queue, its entry there (taken out with the
// grant).
func (e *Engine) fastGrantTxn(r engine.AcquireRequest, id clientv3.LeaseID, ttl int64, entry int64) ([]clientv3.Cmp, []clientv3.Op) {
	prefix := e.keys.name(r.Name)
	lockKey := prefix + lockSuffix
	h := hold{Owner: r.Owner, Count: 1, Attempt: r.Attempt, Metadata: r.Metadata, TTL: ttl}
	ops := []clientv3.Op{clientv3.OpPut(lockKey, h.encode(), clientv3.WithLease(id))}
	if entry != 0 {
		// The waiter heads the queue when its entry is there and no entry
		// is older (every one's CreateRevision is at least its own): it
		// takes a free lock that is reserved for nobody, or for it (a
		// reservation its engine's watch saw, unchanged since).
		own, res, queue := prefix+queueSuffix+escape(r.Waiter), prefix+resSuffix, prefix+queueSuffix
		resCmp := createdIs(res, "", pb.Compare_EQUAL, 0)
		if rev := e.heads.reservation(r.Name, r.Waiter); rev != 0 {
			resCmp = modifiedAt(res, rev)
			ops = append(ops, clientv3.OpDelete(res))
		}
		cmps := []clientv3.Cmp{createdIs(lockKey, "", pb.Compare_EQUAL, 0), e.noHolder(prefix), e.noSharedWaiter(prefix),
			createdIs(own, "", pb.Compare_EQUAL, entry),
			createdIs(queue, rangeEnd(queue), pb.Compare_GREATER, entry-1), resCmp}
		ops = append(ops, clientv3.OpDelete(own), clientv3.OpDelete(prefix+wakeSuffix))
		return cmps, ops
	}
	start, end := freeRange(prefix) // no lock key, entry or reservation
	return []clientv3.Cmp{createdIs(start, end, pb.Compare_EQUAL, 0), e.noHolder(prefix), e.noSharedWaiter(prefix)}, ops
}

// fastRelease frees a lock this engine granted (one hold, unchanged since)
// in one transaction, a deletion compared with the engine's own write, as
// etcd's Mutex unlocks with one deletion. done is false when the lock
// changed since (rare: metadata set, a force-release, its expiry): the
// full decision reads the name. gone is the lock's lease when the
// deletion's outcome is unknown (see retry), else nil. With token (not 0)
// it frees only the grant of that token: the engine's write must be of
// that grant, and the key's CreateRevision is compared with it as well.
func (e *Engine) fastRelease(ctx context.Context, name, owner string, token uint64) (done bool, gone *lockRef, err error) {
	l, ok := e.lockWrite(name, owner)
	if !ok || l.count != 1 || !l.of(token) {
		return false, nil, nil
	}
	lockKey := e.keys.lock(name)
	resp, unsure, err := e.txn(ctx, "release "+name, releaseCmps(lockKey, l.rev, token), []clientv3.Op{clientv3.OpDelete(lockKey)})
	if unsure {
		gone = &l
	}
	if err != nil || !resp.Succeeded {
		return false, gone, err
	}
	e.setLockLease(name, owner, clientv3.NoLease)
	e.recycle(l.lease, l.ttl)
	return true, nil, nil
}

// releaseCmps are the conditions of deleting the lock key as a release of
// the hold this engine wrote at rev: unchanged since, and of the grant of
// token (0: any).
func releaseCmps(lockKey string, rev int64, token uint64) []clientv3.Cmp {
	cmps := []clientv3.Cmp{modifiedAt(lockKey, rev)}
	if token != 0 {
		cmps = append(cmps, createdIs(lockKey, "", pb.Compare_EQUAL, int64(token)))
	}
	return cmps
}

// busyFor is how long a queue seen on a name keeps its first attempts off
// the fast transaction (see fastAcquire).
const busyFor = time.Second

// busyNames remembers when this engine last read a non-empty queue of each
// name (until it reads an empty one).
type busyNames struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// sawQueue records a read of name's queue that found someone waiting.
func (b *busyNames) sawQueue(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]time.Time{name: time.Now()}
		return
	}
	if len(b.m) >= 1024 {
		clear(b.m) // a hint, not state: forgetting costs a failed transaction at most
	}
	b.m[name] = time.Now()
}

// sawNoQueue records a read of name's queue that found nobody waiting.
func (b *busyNames) sawNoQueue(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, name)
}

// recent reports whether a queue of name was seen within busyFor.
func (b *busyNames) recent(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.m[name]
	return ok && time.Since(at) < busyFor
}
