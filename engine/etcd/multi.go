package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

var _ engine.MultiAcquirer = (*Engine)(nil)

// maxMulti is the most names one set transaction grants: etcd refuses a
// transaction of more than --max-txn-ops comparisons (128 by default), and
// a grant compares four keys per name (see fastGrantTxn).
const maxMulti = 128 / 4

// AcquireMulti implements engine.MultiAcquirer: one transaction puts every
// name's lock key, each on a lease of its own, if every name passes the
// comparisons of a fast grant (fastGrantTxn: free, no shared holder or
// queued shared waiter, no queue, no reservation); otherwise it reads every name's keys. Each name's
// token is its key's CreateRevision, the transaction's revision: above
// every earlier token of that name, as for Acquire (two names of one set
// share the value). A set of more than maxMulti names, or a request with a
// waiter, is engine.ErrNotAtomic.
func (e *Engine) AcquireMulti(ctx context.Context, rs []engine.AcquireRequest) (engine.MultiGrant, error) {
	if err := e.check(ctx); err != nil {
		return engine.MultiGrant{}, err
	}
	if err := checkSet(rs); err != nil {
		return engine.MultiGrant{}, err
	}
	if len(rs) == 0 {
		return engine.MultiGrant{Acquired: true}, nil
	}
	for range maxConflicts {
		mg, again, err := e.acquireSet(ctx, rs)
		if err != nil || !again {
			return mg, err
		}
	}
	return engine.MultiGrant{}, conflict("acquire set", rs[0].Name)
}

// checkSet refuses a set the engine cannot take: repeated names (an
// *engine.ArgumentError), or one transaction cannot grant (ErrNotAtomic).
func checkSet(rs []engine.AcquireRequest) error {
	if len(rs) > maxMulti {
		return fmt.Errorf("%w: %d names, more than the %d of one etcd transaction", engine.ErrNotAtomic, len(rs), maxMulti)
	}
	return engine.CheckSet(rs)
}

// setLeases are the leases of a set's grant, one per request: pooled ones
// (renewed in the round trip of the grant, as fastAcquire does) or new.
type setLeases struct {
	ids    []clientv3.LeaseID
	ttls   []int64
	pooled []int  // indexes of the pooled leases
	alive  []bool // known alive since the call began
	unsure bool   // a write on them may have been applied (see retry)
}

// setLeases takes a lease of each request's ttl: from the pool, else a
// new one (alive from its grant on), the new ones granted concurrently.
func (e *Engine) setLeases(ctx context.Context, rs []engine.AcquireRequest) (*setLeases, error) {
	ls := &setLeases{ids: make([]clientv3.LeaseID, len(rs)), ttls: make([]int64, len(rs)), alive: make([]bool, len(rs))}
	var missing []int
	for i, r := range rs {
		ls.ttls[i] = leaseSeconds(r.TTL)
		if id, ok := e.pool.take(ls.ttls[i]); ok {
			ls.ids[i] = id
			ls.pooled = append(ls.pooled, i)
		} else {
			missing = append(missing, i)
		}
	}
	errs := make([]error, len(missing))
	var wg sync.WaitGroup
	for j, i := range missing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := time.Now()
			resp, err := e.grant(ctx, "grant a lease", ls.ttls[i])
			if err != nil {
				errs[j] = err
				return
			}
			e.noteKept(resp.ID, ls.ttls[i], sent)
			ls.ids[i], ls.alive[i] = resp.ID, true
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ls.recycle(e)
		return nil, err
	}
	return ls, nil
}

// renew renews the pooled leases (sent at sent) and notes which live.
func (ls *setLeases) renew(ctx context.Context, e *Engine, sent time.Time) error {
	ids := make([]clientv3.LeaseID, len(ls.pooled))
	for j, i := range ls.pooled {
		ids[j] = ls.ids[i]
	}
	kept, err := e.keepAlive(ctx, ids)
	if err != nil {
		return err
	}
	for j, i := range ls.pooled {
		if kept[j] > 0 {
			ls.alive[i] = true
			e.noteKept(ls.ids[i], kept[j], sent)
		}
	}
	return nil
}

// allAlive reports whether every lease is known alive.
func (ls *setLeases) allAlive() bool {
	for _, a := range ls.alive {
		if !a {
			return false
		}
	}
	return true
}

// recycle offers the leases no key uses to the pool: the alive ones, or
// every one when a write on them may have been applied (ls.unsure:
// tainted, they are revoked).
func (ls *setLeases) recycle(e *Engine) {
	for i, id := range ls.ids {
		if ls.unsure {
			e.taint(id)
		}
		if id != clientv3.NoLease && (ls.alive[i] || ls.unsure) {
			e.recycle(id, ls.ttls[i])
		}
	}
}

// acquireSet is one attempt of AcquireMulti; again asks for another (the
// names' state was settled, or changed between the comparison and the read).
func (e *Engine) acquireSet(ctx context.Context, rs []engine.AcquireRequest) (mg engine.MultiGrant, again bool, err error) {
	ls, err := e.setLeases(ctx, rs)
	if err != nil {
		return engine.MultiGrant{}, false, err
	}
	var cmps []clientv3.Cmp
	var ops, reads []clientv3.Op
	for i, r := range rs {
		c, o := e.fastGrantTxn(r, ls.ids[i], ls.ttls[i], 0)
		cmps, ops = append(cmps, c...), append(ops, o...)
		reads = append(reads, clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix()))
	}
	sent := time.Now()
	var kerr error
	var resp *clientv3.TxnResponse
	var unsure bool
	both(func() { kerr = ls.renew(ctx, e, sent) }, func() {
		resp, unsure, err = e.txn(ctx, "acquire set "+rs[0].Name, cmps, ops, reads...)
	})
	ls.unsure = unsure
	if err != nil {
		ls.recycle(e)
		if !unsure && errors.Is(err, rpctypes.ErrTooManyOps) { // a server run with a lower --max-txn-ops
			err = fmt.Errorf("%w: %w", engine.ErrNotAtomic, err)
		}
		return engine.MultiGrant{}, false, err
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		sts := make([]*state, len(rs))
		for i, r := range rs {
			if sts[i], err = e.decode(r.Name, rev, resp.Responses[i].GetResponseRange().Kvs); err != nil {
				ls.recycle(e)
				return engine.MultiGrant{}, false, err
			}
		}
		if !unsure || !ls.granted(rs, sts) {
			ls.recycle(e)
			return e.refuseSet(ctx, rs, sts)
		}
		// An attempt without an answer granted the set: it is ours.
		rev = sts[0].lock.ModRevision
	}
	if kerr != nil && len(ls.pooled) > 0 { // the renewal's answer was lost: renew again
		kerr = ls.renew(ctx, e, time.Now())
	}
	if kerr != nil || !ls.allAlive() {
		e.undoSet(ctx, rs, rev)
		ls.recycle(e)
		if kerr == nil {
			kerr = backendErr("acquire set "+rs[0].Name, errLeaseLost)
		}
		return engine.MultiGrant{}, false, kerr
	}
	if unsure {
		for _, id := range ls.ids {
			e.taint(id)
		}
	}
	tokens := make([]uint64, len(rs))
	for i, r := range rs {
		e.wrote(r.Name, r.Owner, engine.Mutex, ls.ids[i], rev, 1, ls.ttls[i], rev)
		tokens[i] = uint64(rev)
	}
	return engine.MultiGrant{Acquired: true, Tokens: tokens}, false, nil
}

// granted reports whether every lock key of the set is the set's own, on
// its lease (a transaction applied without an answer; the owners are
// one-off, and the keys were put together, so one is all).
func (ls *setLeases) granted(rs []engine.AcquireRequest, sts []*state) bool {
	for i, st := range sts {
		if st.lock == nil || st.hold.Owner != rs[i].Owner || clientv3.LeaseID(st.lock.Lease) != ls.ids[i] {
			return false
		}
	}
	return true
}

// refuseSet answers a set refused as of sts, each name's keys as the
// transaction read them: a name held as a shared lock, or with a shared
// lock's waiters queued, is a KindError,
// whatever holds the names before it (a kind error is never contention);
// otherwise the first name that blocks it, as Acquire would answer. Names
// whose reservations lapsed are settled first, and again asks for another
// try.
func (e *Engine) refuseSet(ctx context.Context, rs []engine.AcquireRequest, sts []*state) (engine.MultiGrant, bool, error) {
	settled := false
	for _, st := range sts {
		if len(st.lapse) > 0 {
			if err := e.settle(ctx, st); err != nil {
				return engine.MultiGrant{}, false, err
			}
			settled = true
		}
	}
	if settled {
		return engine.MultiGrant{}, true, nil
	}
	for i, st := range sts {
		if st.shared != 0 && st.lock == nil {
			return engine.MultiGrant{}, false, engine.KindError(rs[i].Name, st.shared, 0)
		}
	}
	for i, st := range sts {
		switch {
		case st.lock != nil:
			left, err := e.timeLeft(ctx, clientv3.LeaseID(st.lock.Lease))
			if err != nil {
				return engine.MultiGrant{}, false, err
			}
			return engine.MultiGrant{Blocked: i, Grant: engine.Grant{Holder: st.hold.Owner, HolderTTL: max(left, 0)}}, false, nil
		case len(st.queue) > 0 || st.resKV != nil:
			// Free, but kept for its queue: a set does not go ahead of it.
			return engine.MultiGrant{Blocked: i, Grant: engine.Grant{Reserved: true, HolderTTL: reserveTTL * time.Second}}, false, nil
		}
	}
	return engine.MultiGrant{}, true, nil // changed meanwhile (a shared holder came and went)
}

// undoSet deletes the set's lock keys put at rev (a grant whose leases
// could not be renewed), each only if unchanged: best effort, they expire
// with their leases anyway.
func (e *Engine) undoSet(ctx context.Context, rs []engine.AcquireRequest, rev int64) {
	ops := make([]clientv3.Op, len(rs))
	for i, r := range rs {
		key := e.keys.lock(r.Name)
		ops[i] = clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)},
			[]clientv3.Op{clientv3.OpDelete(key)}, nil)
	}
	_, _, _ = e.txn(ctx, "undo acquire set "+rs[0].Name, nil, ops)
}
