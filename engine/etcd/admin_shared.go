package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// The administration of locks of every kind: force-release frees every
// holder (or one, by owner) and leaves, for each, a taken-over mark
// t/OWNER on the holder's own lease (so it goes when the holder's lease
// would have ended); the holder's next renewal finds its key gone and the
// mark there, and is answered HeldByOther. List finds a shared lock by its
// s or h/ keys.

// takenSuffix is the prefix of a name's taken-over marks.
const takenSuffix = "t/"

func (k keyspace) taken(name, owner string) string { return k.name(name) + takenSuffix + escape(owner) }

// forceShared frees every holder of the shared lock name, or only owner
// when owner is not "", and wakes the head of its queue if it fits; it
// reports whether anyone (owner) held it.
func (e *Engine) forceShared(ctx context.Context, name, owner string) (bool, error) {
	freed := false // a deletion may have been applied without an answer
	for range maxConflicts {
		st, err := e.readShared(ctx, name)
		if err != nil {
			return false, err
		}
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(e.keys.sharedQueue(name)), "<", st.rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(e.keys.config(name)), "=", modRev(st.cfg)),
		}
		var ops []clientv3.Op
		used := st.used()
		for _, h := range st.holders {
			if owner != "" && h.owner != owner {
				continue
			}
			key := e.keys.holder(name, h.owner)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", h.kv.ModRevision))
			ops = append(ops, clientv3.OpDelete(key))
			ops = append(ops, e.takenOps(name, h.owner, h.kv.Lease)...)
			used -= h.Weight
		}
		if len(ops) == 0 {
			return freed, nil
		}
		wcmps, wake := e.wakeOps(st, "", used)
		cmps = append(cmps, wcmps...)
		ops = append(ops, wake...)
		ok, unsure, err := e.commitUnsure(ctx, "force-release "+name, cmps, ops...)
		freed = freed || unsure
		if err != nil || ok {
			return ok, err
		}
	}
	return false, conflict("force-release", name)
}

// takenOps marks owner's hold of name, of either kind, taken over: the
// mark t/OWNER is put on the holder's own lease, so it goes when that
// lease would have ended (a key without a lease leaves no mark).
func (e *Engine) takenOps(name, owner string, lease int64) []clientv3.Op {
	if lease == 0 {
		return nil
	}
	return []clientv3.Op{clientv3.OpPut(e.keys.taken(name, owner), "", clientv3.WithLease(clientv3.LeaseID(lease)))}
}

// takenOver answers HeldByOther, instead of Missing, the renewals of
// holders a force-release freed, of either kind, while their mark is there
// (until their lease would have ended: a resent renewal is answered the
// same), in one transaction.
func (e *Engine) takenOver(ctx context.Context, rs []engine.ExtendRequest, out []engine.ExtendResult) {
	var idx []int
	var ops []clientv3.Op
	for i, r := range rs {
		if !r.Waiter && out[i].Status == engine.Missing && out[i].Err == nil {
			idx = append(idx, i)
			ops = append(ops, clientv3.OpGet(e.keys.taken(r.Name, r.Owner), clientv3.WithCountOnly()))
		}
	}
	if len(ops) == 0 || len(ops) > maxTxnOps {
		return
	}
	resp, _, err := e.txn(ctx, "taken over", nil, ops)
	if err != nil {
		return // Missing is still true: the holder lost its hold
	}
	for j, rr := range resp.Responses {
		if rr.GetResponseRange().Count > 0 {
			out[idx[j]] = engine.ExtendResult{Status: engine.HeldByOther}
		}
	}
}

// sharedListed describes the shared locks named, keeping the ones held or
// waited for.
func (e *Engine) sharedListed(ctx context.Context, names []string) ([]engine.Info, error) {
	var infos []engine.Info
	for _, name := range names {
		info, err := e.inspectShared(ctx, name)
		if err != nil {
			return nil, err
		}
		if info.Kind != 0 && (info.Held || info.Waiters > 0) {
			infos = append(infos, info)
		}
	}
	return infos, nil
}
