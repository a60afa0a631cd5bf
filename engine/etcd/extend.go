package etcd

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// maxTxnOps is etcd's default limit of operations in one transaction.
const maxTxnOps = 128

// Extend implements engine.Engine. One read transaction fetches every
// listed lock (and, for a waiter's heartbeat, its name's queue) while the
// leases this engine knows for them are renewed on one keepalive stream: one
// round trip for the batch. A lease the engine did not know (a lease
// attached elsewhere) is renewed in a second round trip; a new ttl moves the
// key to a new lease (the token, its CreateRevision, stays). A renewal that
// names a token (ExtendRequest.Token) is judged against that CreateRevision
// as read: another grant of the owner answers HeldByOther.
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	// Each request below is sent again on another member when it hangs
	// (see retry); renewals are idempotent, and a later one only makes a
	// lease live longer.
	sent := time.Now()
	// Leases renewed in the first round trip: the ones this engine knows.
	known, cfgSeen := e.knownLeases(rs)
	var kvs [][]*mvccpb.KeyValue
	var revs []int64
	var rerr, kerr error
	kept := map[clientv3.LeaseID]int64{}
	both(func() {
		ttls, err := e.keepAlive(ctx, known)
		kerr = err
		for i, id := range known {
			if err == nil {
				kept[id] = ttls[i]
				if cfgSeen[id] && ttls[i] > 0 {
					e.noteKept(id, ttls[i], sent)
				}
			}
		}
	}, func() { kvs, revs, rerr = e.readMany(ctx, rs) })
	if rerr != nil {
		return nil, rerr
	}
	out, late := e.judgeExtends(rs, revs, kvs)
	e.takenOver(ctx, rs, out)
	// Renew each lease: from the first round trip when it was the right
	// one, else now.
	e.renewAgain(ctx, rs, kvs, late, kept, kerr, out)
	e.settleExtends(ctx, rs, kvs, late, kept, sent, out)
	return out, nil
}

// knownLeases returns the leases of rs that this engine knows (a lock's or a
// queued waiter's lease, and the config leases of shared locks due for
// renewal), to renew in the first round trip; cfgSeen marks the config
// leases among them.
func (e *Engine) knownLeases(rs []engine.ExtendRequest) (known []clientv3.LeaseID, cfgSeen map[clientv3.LeaseID]bool) {
	for _, r := range rs {
		guess := clientv3.NoLease
		if r.Waiter {
			if l, ok := e.waiters.get(waiterRef{r.Name, r.Owner}); ok {
				guess = l.id
			}
		} else {
			guess = e.lockGuess(r.Name, r.Owner, r.Token)
		}
		if guess != clientv3.NoLease {
			known = append(known, guess)
		}
	}
	// A shared lock's kind and limit live while its holders renew.
	cfgSeen = map[clientv3.LeaseID]bool{}
	for _, r := range rs {
		if !r.Kind.Shared() || r.Waiter {
			continue
		}
		if id := e.configLeaseOf(r.Name); id != clientv3.NoLease && !cfgSeen[id] && !e.alive(id, configTTL*time.Second/2) {
			cfgSeen[id] = true
			known = append(known, id)
		}
	}
	return known, cfgSeen
}

// judgeExtends answers each request from the keys read in the first round
// trip; late lists the requests still held, whose lease must be renewed.
func (e *Engine) judgeExtends(rs []engine.ExtendRequest, revs []int64, kvs [][]*mvccpb.KeyValue) (out []engine.ExtendResult, late []int) {
	out = make([]engine.ExtendResult, len(rs))
	for i, r := range rs {
		if r.Waiter && r.Kind.Shared() {
			out[i] = e.sharedHeartbeat(r, revs[i], kvs[i])
			if out[i].Status == engine.Extended {
				late = append(late, i)
			}
			continue
		}
		if r.Waiter {
			out[i] = e.heartbeat(r, revs[i], kvs[i])
			if out[i].Status == engine.Extended {
				late = append(late, i)
			}
			continue
		}
		if r.Kind.Shared() {
			out[i] = e.checkSharedHold(r, kvs[i])
		} else {
			out[i] = e.checkHold(r, kvs[i])
		}
		if out[i].Status == engine.Extended {
			late = append(late, i)
		}
	}
	return out, late
}

// renewAgain renews the leases of the late requests that the first round
// trip did not renew (it guessed another lease, or it failed); a failure
// there is each such request's error.
func (e *Engine) renewAgain(ctx context.Context, rs []engine.ExtendRequest, kvs [][]*mvccpb.KeyValue, late []int, kept map[clientv3.LeaseID]int64, kerr error, out []engine.ExtendResult) {
	var again []clientv3.LeaseID
	for _, i := range late {
		id := leaseOf(rs[i], kvs[i], e)
		if _, ok := kept[id]; !ok || kerr != nil {
			again = append(again, id)
		}
	}
	if len(again) > 0 {
		sent2 := time.Now()
		ttls, err := e.keepAlive(ctx, again)
		if err != nil {
			for _, i := range late {
				if _, ok := kept[leaseOf(rs[i], kvs[i], e)]; !ok || kerr != nil {
					out[i] = engine.ExtendResult{Err: err}
				}
			}
		} else {
			for j, id := range again {
				kept[id] = ttls[j]
				e.noteKept(id, ttls[j], sent2)
			}
		}
	}
}

// settleExtends answers the late requests from their lease's time left: a
// lease gone is a lost lock, a lease shorter than the requested ttl moves
// the key to a new lease, else the lease is noted as kept.
func (e *Engine) settleExtends(ctx context.Context, rs []engine.ExtendRequest, kvs [][]*mvccpb.KeyValue, late []int, kept map[clientv3.LeaseID]int64, sent time.Time, out []engine.ExtendResult) {
	for _, i := range late {
		if out[i].Err != nil {
			continue
		}
		r := rs[i]
		id := leaseOf(r, kvs[i], e)
		ttl := kept[id]
		move := !r.Waiter && movesLease(kvs[i], leaseSeconds(r.TTL))
		switch {
		case ttl <= 0:
			out[i] = engine.ExtendResult{Status: engine.Missing} // the lease, and so the key, is gone
		case move && r.Kind.Shared():
			out[i] = e.moveSharedLease(ctx, r, kvs[i][0])
		case move:
			out[i] = e.moveLease(ctx, r, kvs[i][0])
		default:
			e.noteKept(id, ttl, sent)
			if !r.Waiter {
				e.heldOn(r.Name, r.Owner, id, kvs[i][0].CreateRevision)
			}
		}
	}
}

// leaseOf returns the lease of the key an extension read.
func leaseOf(r engine.ExtendRequest, kvs []*mvccpb.KeyValue, e *Engine) clientv3.LeaseID {
	if !r.Waiter {
		return clientv3.LeaseID(kvs[0].Lease)
	}
	key := e.keys.waiter(r.Name, r.Owner)
	if r.Kind.Shared() {
		key = e.keys.sharedWaiter(r.Name, r.Owner)
	}
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return clientv3.LeaseID(kv.Lease)
		}
	}
	return clientv3.NoLease
}

// readMany reads, in transactions of at most maxTxnOps reads sent at once,
// the lock key of each lock request and the whole prefix of each waiter's
// name.
func (e *Engine) readMany(ctx context.Context, rs []engine.ExtendRequest) ([][]*mvccpb.KeyValue, []int64, error) {
	kvs := make([][]*mvccpb.KeyValue, len(rs))
	revs := make([]int64, len(rs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for lo := 0; lo < len(rs); lo += maxTxnOps {
		hi := min(lo+maxTxnOps, len(rs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops := make([]clientv3.Op, 0, hi-lo)
			for _, r := range rs[lo:hi] {
				if r.Waiter {
					ops = append(ops, clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix()))
				} else if r.Kind.Shared() {
					ops = append(ops, clientv3.OpGet(e.keys.holder(r.Name, r.Owner)))
				} else {
					ops = append(ops, clientv3.OpGet(e.keys.lock(r.Name)))
				}
			}
			resp, _, err := e.txn(ctx, "read for extend", nil, ops)
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
				return
			}
			for j, rr := range resp.Responses {
				kvs[lo+j] = rr.GetResponseRange().Kvs
				revs[lo+j] = resp.Header.Revision
			}
		}()
	}
	wg.Wait()
	return kvs, revs, first
}

// checkHold judges a lock extension by the lock key read: Extended (the
// lease is renewed afterwards) when owner holds it, under the grant of
// r.Token (its CreateRevision) unless that is 0.
func (e *Engine) checkHold(r engine.ExtendRequest, kvs []*mvccpb.KeyValue) engine.ExtendResult {
	if len(kvs) == 0 {
		e.setLockLease(r.Name, r.Owner, clientv3.NoLease)
		return engine.ExtendResult{Status: engine.Missing}
	}
	st, err := e.decode(r.Name, 0, kvs)
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	if st.hold.Owner != r.Owner {
		e.setLockLease(r.Name, r.Owner, clientv3.NoLease)
		return engine.ExtendResult{Status: engine.HeldByOther}
	}
	token := uint64(kvs[0].CreateRevision)
	if r.Token != 0 && token != r.Token {
		// A newer grant of the owner (the lease's grant was freed): left
		// as it is, neither moved nor renewed here (nor in the first
		// round trip when the engine knows its lease: lockGuess).
		return engine.ExtendResult{Status: engine.HeldByOther, Token: token}
	}
	return engine.ExtendResult{Status: engine.Extended, Token: token}
}

// heartbeat judges a waiter's heartbeat by its name's keys: Extended while
// it is queued (its lease is renewed afterwards), with Wake when it heads
// the queue of a free lock that is not reserved for another waiter, or
// when a wake-up went by while its place was being recorded (heads.set).
func (e *Engine) heartbeat(r engine.ExtendRequest, rev int64, kvs []*mvccpb.KeyValue) engine.ExtendResult {
	st, err := e.decode(r.Name, rev, kvs)
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	pred, queued := st.position(r.Owner)
	if !queued {
		e.heads.remove(r.Name, r.Owner)
		return engine.ExtendResult{Status: engine.Missing}
	}
	res := st.reservedFor()
	head := pred == ""
	e.heads.entered(r.Name, r.Owner, st.waiter(r.Owner).kv.CreateRevision)
	missed := e.heads.set(r.Name, r.Owner, pred, st.rev)
	return engine.ExtendResult{Status: engine.Extended, Wake: missed || st.lock == nil && head && (res == "" || res == r.Owner) ||
		reserves(st, pred)}
}

// reserves reports whether the waiter behind key pred should reserve the
// free lock of st for its head: it stands right behind a head that is owed
// the lock (due) and has no reservation yet. A waiter entering the queue
// leaves that to its heartbeat (see admit), so that a head that does not
// come (its process died) is still dropped when the reservation lapses.
func reserves(st *state, pred string) bool {
	h := st.head()
	return st.lock == nil && st.res == nil && h != nil && pred == string(h.kv.Key) && due(h)
}

// moveLease sets a new ttl on a held lock: its key is put again, on a new
// lease of that ttl, if it is unchanged since it was read (putOnNewLease).
func (e *Engine) moveLease(ctx context.Context, r engine.ExtendRequest, kv *mvccpb.KeyValue) engine.ExtendResult {
	st, err := e.decode(r.Name, 0, []*mvccpb.KeyValue{kv})
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	return e.putOnNewLease(ctx, r, kv, st.hold.TTL, func(ttl int64) string {
		h := st.hold
		h.TTL = ttl
		return h.encode()
	})
}

// putOnNewLease puts the key of a hold read as kv again, on a new lease of
// r's ttl, with the value encode gives for that ttl, if the key is
// unchanged since it was read; the lease it leaves (of oldTTL seconds) is
// offered to the pool. A key changed meanwhile (a re-entry, a release,
// another owner) is a conflict: the next renewal judges it again.
func (e *Engine) putOnNewLease(ctx context.Context, r engine.ExtendRequest, kv *mvccpb.KeyValue, oldTTL int64, encode func(ttl int64) string) engine.ExtendResult {
	ttl := leaseSeconds(r.TTL)
	id, err := e.obtain(ctx, ttl)
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	ok, unsure, err := e.commitUnsure(ctx, "extend "+r.Name,
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)},
		clientv3.OpPut(string(kv.Key), encode(ttl), clientv3.WithLease(id)))
	if unsure {
		e.taint(id)
	}
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	if !ok {
		if !unsure { // else the key may be on it: never pooled
			e.recycle(id, ttl)
		}
		return engine.ExtendResult{Err: conflict("extend", r.Name)}
	}
	e.recycle(clientv3.LeaseID(kv.Lease), oldTTL)
	e.heldOn(r.Name, r.Owner, id, kv.CreateRevision)
	return engine.ExtendResult{Status: engine.Extended, Token: uint64(kv.CreateRevision)}
}

// movesLease reports whether an extension to ttl seconds moves the key of
// a lock (or a shared holder) read to a new lease: when the ttl of its
// lease recorded in the key differs, unless the key stays on its lease
// (keepsLease: the owner holds it more than once, and ttl is shorter).
func movesLease(kvs []*mvccpb.KeyValue, ttl int64) bool {
	var h hold // (a shared holder's key records its holds and ttl alike)
	if len(kvs) == 0 || json.Unmarshal(kvs[0].Value, &h) != nil {
		return true
	}
	return h.TTL != ttl && !keepsLease(h.Count, h.TTL, ttl)
}
