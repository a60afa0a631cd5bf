package etcd

import (
	"context"
	"math/rand/v2"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// releaseMutex is Release of a mutex: one hold of owner is dropped; the
// last one deletes the lock key, which wakes the head of the queue.
//
// A deletion sent again after an attempt that may have been applied
// without an answer (see retry) finds the key gone, or another owner's: the
// release answers Released then, since this call's deletion is the likely
// cause (the other one, the lease's expiry, the Client has already
// signalled). A count-down carries the release's id, rel (releases: the
// caller's, the same on each copy it sends, for ReleaseOnce), by which a
// count-down applied without an answer is recognised and not repeated.
//
// A release naming a grant's token (r.Token, not 0) drops a hold of that
// grant only: the lock key's CreateRevision is compared with it, in the
// fast transaction as in the full decision's read, and a newer grant of
// the owner answers NotOwner.
func (e *Engine) releaseMutex(ctx context.Context, r engine.ReleaseRequest, rel string) (engine.ReleaseResult, error) {
	if err := e.check(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	done, gone, err := e.fastRelease(ctx, r.Name, r.Owner, r.Token)
	if err != nil || done {
		if done {
			return engine.ReleaseResult{Status: engine.Released}, nil
		}
		return engine.ReleaseResult{}, err
	}
	return e.releaseRead(ctx, r.Name, r.Owner, r.Token, rel, nil, gone)
}

// releaseRead is Release after its fast attempt: st is the name's keys as
// read (nil: read them), gone the lock's lease when a deletion may have
// been applied without an answer (see retry), else nil; token, when not 0,
// the grant whose hold is dropped; rel the release's id (releases).
func (e *Engine) releaseRead(ctx context.Context, name, owner string, token uint64, rel string, st *state, gone *lockRef) (engine.ReleaseResult, error) {
	var err error
	for range maxConflicts {
		if st == nil {
			if st, err = e.read(ctx, name); err != nil {
				return engine.ReleaseResult{}, err
			}
		}
		newer := st.lock != nil && st.hold.Owner == owner && token != 0 && uint64(st.lock.CreateRevision) != token
		switch {
		case gone != nil && newer:
			// The grant gone was of token (the deletion compared it), and
			// the owner holds a newer one: its record, if any, stays.
			e.dropLockLease(name, owner, gone.lease)
			e.recycle(gone.lease, gone.ttl)
			return engine.ReleaseResult{Status: engine.Released}, nil
		case gone != nil && (st.lock == nil || st.hold.Owner != owner):
			e.setLockLease(name, owner, clientv3.NoLease)
			e.recycle(gone.lease, gone.ttl)
			return engine.ReleaseResult{Status: engine.Released}, nil
		case st.lock == nil:
			return engine.ReleaseResult{Status: engine.NotHeld}, nil
		case st.hold.Owner != owner, newer:
			return engine.ReleaseResult{Status: engine.NotOwner}, nil
		case st.hold.has(rel):
			return engine.ReleaseResult{Status: engine.Released, Remaining: st.hold.Count}, nil
		}
		if st.hold.Count > 1 {
			h := st.hold
			h.Count--
			h.releases = h.with(rel)
			ok, err := e.commit(ctx, "release "+name, st.unchanged(e, ""),
				clientv3.OpPut(e.keys.lock(name), h.encode(), clientv3.WithLease(clientv3.LeaseID(st.lock.Lease))))
			if err != nil {
				return engine.ReleaseResult{}, err
			}
			if ok {
				return engine.ReleaseResult{Status: engine.Released, Remaining: h.Count}, nil
			}
			st = nil
			continue
		}
		ok, unsure, err := e.free(ctx, st)
		if unsure {
			gone = &lockRef{lease: clientv3.LeaseID(st.lock.Lease), ttl: st.hold.TTL}
		}
		if err != nil {
			return engine.ReleaseResult{}, err
		}
		if ok {
			e.setLockLease(name, owner, clientv3.NoLease)
			e.recycle(clientv3.LeaseID(st.lock.Lease), st.hold.TTL)
			return engine.ReleaseResult{Status: engine.Released}, nil
		}
		st = nil
	}
	return engine.ReleaseResult{}, conflict("release", name)
}

// ForceRelease implements engine.ForceReleaser: the lock is freed whoever
// holds it (a mutex, or every holder of a shared lock: see forceShared),
// and the head of its queue is woken. Every holder freed learns of it at
// its next renewal, answered HeldByOther (admin_shared.go: takenOps).
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	return e.forceRelease(ctx, name, "")
}

// ForceReleaseHolder implements engine.HolderReleaser: as ForceRelease,
// but only owner's hold is freed (the mutex only when owner holds it).
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	if owner == "" {
		return false, e.check(ctx) // nobody holds as "" (forceRelease reads "" as everyone)
	}
	return e.forceRelease(ctx, name, owner)
}

// forceRelease frees name's mutex, or its shared holders, or only owner's
// hold when owner is not "".
func (e *Engine) forceRelease(ctx context.Context, name, owner string) (bool, error) {
	if err := e.check(ctx); err != nil {
		return false, err
	}
	freed := false // a deletion may have been applied without an answer
	for range maxConflicts {
		st, err := e.read(ctx, name)
		if err != nil {
			return false, err
		}
		if st.lock == nil {
			ok, err := e.forceShared(ctx, name, owner)
			return ok || (freed && err == nil), err
		}
		if owner != "" && st.hold.Owner != owner {
			return freed, nil
		}
		ok, unsure, err := e.commitUnsure(ctx, "force-release "+name,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(e.keys.lock(name)), "=", st.lock.ModRevision)},
			append(e.takenOps(name, st.hold.Owner, st.lock.Lease), clientv3.OpDelete(e.keys.lock(name)))...)
		freed = freed || unsure
		if err != nil || ok {
			return ok, err
		}
	}
	return false, conflict("force-release", name)
}

// free deletes the lock key of st; ok is false when it changed since it
// was read (unsure: see retry). The deletion itself wakes the head of the
// queue (its engine watches the lock key, as in etcd's recipe), and while
// the head lives no newcomer takes the lock ahead of it (see admit): a
// release needs no reservation, and so no read of the queue.
func (e *Engine) free(ctx context.Context, st *state) (ok, unsure bool, err error) {
	return e.commitUnsure(ctx, "release "+st.name,
		[]clientv3.Cmp{modifiedAt(e.keys.lock(st.name), st.lock.ModRevision)},
		clientv3.OpDelete(e.keys.lock(st.name)))
}

// SetMetadata implements engine.MetadataSetter. The lock key keeps its
// lease, so its ttl is untouched; the put wakes the name's subscribers. A
// request naming a grant's token (r.Token, not 0: an election's term) sets
// the metadata of that grant only: the lock key's CreateRevision is
// compared with it, in the read and in the transaction that writes, and a
// newer grant of the owner answers HeldByOther.
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	for range maxConflicts {
		st, err := e.read(ctx, r.Name)
		if err != nil {
			return 0, err
		}
		switch {
		case st.lock == nil:
			// Freed: taken over when a force-release left its mark, as a
			// renewal is told (takenOver); else expired or released.
			out := []engine.ExtendResult{{Status: engine.Missing}}
			e.takenOver(ctx, []engine.ExtendRequest{{Name: r.Name, Owner: r.Owner}}, out)
			return out[0].Status, nil
		case st.hold.Owner != r.Owner:
			return engine.HeldByOther, nil
		case r.Token != 0 && uint64(st.lock.CreateRevision) != r.Token:
			return engine.HeldByOther, nil // a newer grant of the owner
		}
		h := st.hold
		h.Metadata = r.Metadata
		cmps := st.unchanged(e, "")
		if r.Token != 0 {
			cmps = append(cmps, createdIs(e.keys.lock(r.Name), "", pb.Compare_EQUAL, int64(r.Token)))
		}
		ok, err := e.commit(ctx, "set metadata of "+r.Name, cmps,
			clientv3.OpPut(e.keys.lock(r.Name), h.encode(), clientv3.WithLease(clientv3.LeaseID(st.lock.Lease))))
		if err != nil {
			return 0, err
		}
		if ok {
			return engine.Extended, nil
		}
	}
	return 0, conflict("set metadata", r.Name)
}

// commit runs ops if every comparison holds, and reports whether they did.
func (e *Engine) commit(ctx context.Context, op string, cmps []clientv3.Cmp, ops ...clientv3.Op) (bool, error) {
	ok, _, err := e.commitUnsure(ctx, op, cmps, ops...)
	return ok, err
}

// commitUnsure is commit that also reports whether an attempt may have
// been applied without an answer (see retry): ok false with unsure true
// may mean that the operations were applied by that attempt.
func (e *Engine) commitUnsure(ctx context.Context, op string, cmps []clientv3.Cmp, ops ...clientv3.Op) (ok, unsure bool, err error) {
	resp, unsure, err := e.txn(ctx, op, cmps, ops)
	if err != nil {
		return false, unsure, err
	}
	return resp.Succeeded, unsure, nil
}

// releaseMark returns a mark of one release call (see releases).
func releaseMark() string { return strconv.FormatUint(rand.Uint64(), 36) }
