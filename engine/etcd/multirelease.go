package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

var _ engine.MultiReleaser = (*Engine)(nil)

// ReleaseMulti implements engine.MultiReleaser: one transaction with a
// nested one per name, which deletes the lock key this engine granted
// (one hold, unchanged since: fastRelease's condition) or else reads the
// name's keys; a name not released so goes on as Release does from that
// read (a count-down, another owner, a lock gone).
func (e *Engine) ReleaseMulti(ctx context.Context, names, owners []string) ([]engine.ReleaseResult, error) {
	out, err := e.releaseMulti(ctx, names, owners)
	if err != nil {
		return nil, err
	}
	// A member freed by a force-release whose mark stands: taken over,
	// as Release answers (takenOver: one read, for these members only).
	var rs []engine.ExtendRequest
	var idx []int
	for i, r := range out {
		if r.Status == engine.NotHeld {
			rs, idx = append(rs, engine.ExtendRequest{Name: names[i], Owner: owners[i]}), append(idx, i)
		}
	}
	if len(rs) > 0 {
		told := make([]engine.ExtendResult, len(rs))
		for j := range told {
			told[j].Status = engine.Missing
		}
		e.takenOver(ctx, rs, told)
		for j, i := range idx {
			if told[j].Status == engine.HeldByOther {
				out[i].Status = engine.NotOwner
			}
		}
	}
	return out, nil
}

// releaseMulti is ReleaseMulti before the taken-over marks are read.
func (e *Engine) releaseMulti(ctx context.Context, names, owners []string) ([]engine.ReleaseResult, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	if err := engine.CheckReleaseSet(names, owners); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	refs := make([]*lockRef, len(names))
	ops := make([]clientv3.Op, len(names))
	for i, name := range names {
		read := clientv3.OpGet(e.keys.name(name), clientv3.WithPrefix())
		if l, ok := e.lockWrite(name, owners[i]); ok && l.count == 1 {
			refs[i] = &l
			key := e.keys.lock(name)
			ops[i] = clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", l.rev)},
				[]clientv3.Op{clientv3.OpDelete(key)}, []clientv3.Op{read})
		} else {
			ops[i] = read
		}
	}
	resp, unsure, err := e.txn(ctx, "release set "+names[0], nil, ops)
	if err != nil {
		return nil, err
	}
	out := make([]engine.ReleaseResult, len(names))
	for i, name := range names {
		r := resp.Responses[i]
		kvs := r.GetResponseRange().GetKvs()
		if refs[i] != nil {
			t := r.GetResponseTxn()
			if t.Succeeded {
				e.setLockLease(name, owners[i], clientv3.NoLease)
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
		if out[i], err = e.releaseRead(ctx, name, owners[i], 0, st, gone); err != nil {
			return nil, err
		}
	}
	return out, nil
}
