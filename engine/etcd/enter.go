package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// enterQueue is the first attempt of a waiter this engine does not know to
// be queued (a waiting call's wait loop, after a refusal or on a name it
// waited for lately): one transaction puts its entry in the queue, unless
// it is there already, and reads the name's keys either way, instead of a
// read and then the entry's transaction. The decision is then taken on
// that state (st.entered: the entry was put by this call), so that a lock
// held by another owner costs no further request; a free lock is granted
// to the waiter if it heads the queue, and otherwise left to its head,
// which the release woke.
//
// The entry's lease is the waiter's own (still alive) or a pooled lease,
// renewed in the same round trip, else a new one: either way renewed or
// granted after the call began, as the Client counts the entry's deadline
// from the attempt's send time. A nil state (and no error) leaves the
// decision to the full path: the lease was gone.
func (e *Engine) enterQueue(ctx context.Context, r engine.AcquireRequest) (*state, error) {
	ttl := leaseSeconds(r.WaiterTTL)
	ref := waiterRef{r.Name, r.Waiter}
	id, renew, fresh, err := e.entryLease(ctx, ref, ttl)
	if err != nil {
		return nil, err
	}
	key := e.keys.waiter(r.Name, r.Waiter)
	get := clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix())
	var kept []int64
	var kerr error
	var resp *clientv3.TxnResponse
	var unsure bool
	sent := time.Now()
	both(func() {
		if renew {
			kept, kerr = e.keepAlive(ctx, []clientv3.LeaseID{id})
		}
	}, func() {
		resp, unsure, err = e.txn(ctx, "queue on "+r.Name,
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(key, mustJSON(entryOf(r)), clientv3.WithLease(id)), get},
			get)
	})
	if unsure {
		e.taint(id) // an entry put late goes with its lease (see taint)
	}
	renewed := !renew || kerr == nil && kept[0] > 0
	if renew && renewed {
		e.noteKept(id, ttl, sent)
	}
	if err != nil {
		if renew && errors.Is(err, rpctypes.ErrLeaseNotFound) {
			e.forget(id) // the pooled lease was gone: the full path
			return nil, nil
		}
		if fresh {
			e.recycle(id, ttl) // revoked if tainted
		}
		return nil, err
	}
	kvs := resp.Responses[len(resp.Responses)-1].GetResponseRange().Kvs
	st, err := e.decode(r.Name, resp.Header.Revision, kvs)
	if err != nil {
		return nil, err
	}
	own := st.waiter(r.Waiter)
	switch {
	case own != nil && clientv3.LeaseID(own.kv.Lease) == id:
		e.waiters.set(ref, waiterLease{id, ttl})
		st.entered = renewed // else enqueue renews it
	case fresh:
		e.recycle(id, ttl) // not used (the entry was there on another lease)
	}
	return st, nil
}

// entryLease returns the lease for a waiter's entry: the one it had, if it
// still lives for a while, or (fresh) a pooled one, each to be renewed
// alongside the entry's transaction (renew); else (fresh) a new one.
func (e *Engine) entryLease(ctx context.Context, ref waiterRef, ttl int64) (id clientv3.LeaseID, renew, fresh bool, err error) {
	if l, ok := e.waiters.get(ref); ok && l.ttl == ttl && e.alive(l.id, time.Second) {
		return l.id, true, false, nil
	}
	if p, ok := e.pool.takeLease(ttl); ok {
		e.keep(p.id, p.expiry)
		return p.id, true, true, nil
	}
	sent := time.Now()
	resp, err := e.grant(ctx, "grant a lease", ttl)
	if err != nil {
		return 0, false, false, err
	}
	e.noteKept(resp.ID, ttl, sent)
	return resp.ID, false, true, nil
}
