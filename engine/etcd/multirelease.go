package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

var _ engine.MultiReleaser = (*Engine)(nil)

// ReleaseMulti implements engine.MultiReleaser: one transaction with a
// nested one per name, which deletes the lock key this engine granted
// (one hold of the request's grant token, unchanged since: fastRelease's
// condition) or else reads the name's keys; a name not released so goes
// on as Release does from that read (a count-down, another owner or
// grant, a lock gone).
func (e *Engine) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	out, err := e.releaseMulti(ctx, rs)
	if err != nil {
		return nil, err
	}
	// A member freed by a force-release whose mark stands: taken over,
	// as Release answers (takenOver: one read, for these members only).
	var missing []engine.ExtendRequest
	var idx []int
	for i, r := range out {
		if r.Status == engine.NotHeld {
			missing, idx = append(missing, engine.ExtendRequest{Name: rs[i].Name, Owner: rs[i].Owner}), append(idx, i)
		}
	}
	if len(missing) > 0 {
		told := make([]engine.ExtendResult, len(missing))
		for j := range told {
			told[j].Status = engine.Missing
		}
		e.takenOver(ctx, missing, told)
		for j, i := range idx {
			if told[j].Status == engine.HeldByOther {
				out[i].Status = engine.NotOwner
			}
		}
	}
	return out, nil
}

// releaseMulti is ReleaseMulti before the taken-over marks are read.
func (e *Engine) releaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	if err := engine.CheckReleaseSet(rs); err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, nil
	}
	refs := make([]*lockRef, len(rs))
	ops := make([]clientv3.Op, len(rs))
	for i, r := range rs {
		read := clientv3.OpGet(e.keys.name(r.Name), clientv3.WithPrefix())
		if l, ok := e.lockWrite(r.Name, r.Owner); ok && l.count == 1 && l.of(r.Token) {
			refs[i] = &l
			ops[i] = clientv3.OpTxn(releaseCmps(e.keys.lock(r.Name), l.rev, r.Token),
				[]clientv3.Op{clientv3.OpDelete(e.keys.lock(r.Name))}, []clientv3.Op{read})
		} else {
			ops[i] = read
		}
	}
	resp, unsure, err := e.txn(ctx, "release set "+rs[0].Name, nil, ops)
	if err != nil {
		return nil, err
	}
	out := make([]engine.ReleaseResult, len(rs))
	for i, r := range rs {
		name, owner := r.Name, r.Owner
		op := resp.Responses[i]
		kvs := op.GetResponseRange().GetKvs()
		if refs[i] != nil {
			t := op.GetResponseTxn()
			if t.Succeeded {
				e.setLockLease(name, owner, clientv3.NoLease)
				e.recycle(refs[i].lease, refs[i].ttl)
				out[i] = engine.ReleaseResult{Status: engine.Released}
				continue
			}
			kvs = t.Responses[0].GetResponseRange().GetKvs()
		}
		st, err := e.decode(name, resp.Header.Revision, kvs)
		if err != nil {
			return nil, err
		}
		var gone *lockRef
		if unsure {
			gone = refs[i]
		}
		if out[i], err = e.releaseRead(ctx, name, owner, r.Token, releaseMark(), st, gone); err != nil {
			return nil, err
		}
	}
	return out, nil
}
