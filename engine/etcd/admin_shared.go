package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// The administration of shared locks: force-release frees every holder and
// leaves, for each, a taken-over mark t/OWNER on the holder's own lease (so
// it goes when the holder's lease would have ended); the holder's next
// renewal finds its key gone and the mark there, and is answered
// HeldByOther. List finds a shared lock by its s or h/ keys.

// takenSuffix is the prefix of a name's taken-over marks.
const takenSuffix = "t/"

func (k keyspace) taken(name, owner string) string { return k.name(name) + takenSuffix + escape(owner) }

// forceShared frees every holder of the shared lock name and wakes the
// head of its queue; it reports whether anyone held it.
func (e *Engine) forceShared(ctx context.Context, name string) (bool, error) {
	freed := false // a deletion may have been applied without an answer
	for range maxConflicts {
		st, err := e.readShared(ctx, name)
		if err != nil {
			return false, err
		}
		if len(st.holders) == 0 {
			return freed, nil
		}
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(e.keys.sharedQueue(name)), "<", st.rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(e.keys.config(name)), "=", modRev(st.cfg)),
		}
		var ops []clientv3.Op
		for _, h := range st.holders {
			key := e.keys.holder(name, h.owner)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", h.kv.ModRevision))
			ops = append(ops, clientv3.OpDelete(key))
			if h.kv.Lease != 0 {
				ops = append(ops, clientv3.OpPut(e.keys.taken(name, h.owner), "", clientv3.WithLease(clientv3.LeaseID(h.kv.Lease))))
			}
		}
		ops = append(ops, e.wakeOps(st, "", 0)...)
		ok, unsure, err := e.commitUnsure(ctx, "force-release "+name, cmps, ops...)
		freed = freed || unsure
		if err != nil || ok {
			return ok, err
		}
	}
	return false, conflict("force-release", name)
}

// takenOver answers HeldByOther, instead of Missing, the renewals of
// shared holders a force-release freed (their mark is deleted: they are
// told once), in one transaction.
func (e *Engine) takenOver(ctx context.Context, rs []engine.ExtendRequest, out []engine.ExtendResult) {
	var idx []int
	var ops []clientv3.Op
	for i, r := range rs {
		if r.Shared && !r.Waiter && out[i].Status == engine.Missing && out[i].Err == nil {
			idx = append(idx, i)
			ops = append(ops, clientv3.OpDelete(e.keys.taken(r.Name, r.Owner)))
		}
	}
	if len(ops) == 0 || len(ops) > maxTxnOps {
		return
	}
	resp, _, err := e.txn(ctx, "taken over", nil, ops)
	if err != nil {
		return // Missing is still true: the holder lost its permits
	}
	for j, rr := range resp.Responses {
		if rr.GetResponseDeleteRange().Deleted > 0 {
			out[idx[j]] = engine.ExtendResult{Status: engine.HeldByOther}
		}
	}
}

// sharedListed describes the shared locks named, keeping the ones held or
// waited for.
func (e *Engine) sharedListed(ctx context.Context, names []string) ([]engine.Info, error) {
	var infos []engine.Info
	for _, name := range names {
		info, err := e.InspectShared(ctx, name)
		if err != nil {
			return nil, err
		}
		if info.Kind != 0 && (info.Held || info.Waiters > 0) {
			infos = append(infos, info)
		}
	}
	return infos, nil
}
