package etcd

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The comparisons of the hot paths (a grant, a release) are built in
// place: clientv3.Compare and WithPrefix each copy the comparison by
// reflection (proto.Clone), and the transaction copies it once more. These
// build the same comparisons with none of the first copies.

// createdIs compares the CreateRevision of key (of every key in
// [key, end) when end is not "") with v by op (pb.Compare_EQUAL, ...).
func createdIs(key, end string, op pb.Compare_CompareResult, v int64) clientv3.Cmp {
	var c clientv3.Cmp
	pc := c.GetCompare()
	fill(pc, key, end, op)
	pc.Target = pb.Compare_CREATE
	pc.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: v}
	return c
}

// modifiedAt compares the ModRevision of key with v (equal).
func modifiedAt(key string, v int64) clientv3.Cmp {
	var c clientv3.Cmp
	pc := c.GetCompare()
	fill(pc, key, "", pb.Compare_EQUAL)
	pc.Target = pb.Compare_MOD
	pc.TargetUnion = &pb.Compare_ModRevision{ModRevision: v}
	return c
}

func fill(pc *pb.Compare, key, end string, op pb.Compare_CompareResult) {
	pc.Key = []byte(key)
	if end != "" {
		pc.RangeEnd = []byte(end)
	}
	pc.Result = op
}

// noHolder holds while no shared holder's key exists under the name whose
// keys start with prefix (see noSharedHolder).
func (e *Engine) noHolder(prefix string) clientv3.Cmp {
	holders := prefix + holderSuffix
	return createdIs(holders, rangeEnd(holders), pb.Compare_EQUAL, 0)
}

// noSharedWaiter holds while no waiter of a shared lock is queued under the
// name whose keys start with prefix: queued waiters bind a name to their
// kind, as holders do (a waiter's key goes with its lease, so every key
// there is a live waiter's).
func (e *Engine) noSharedWaiter(prefix string) clientv3.Cmp {
	q := prefix + sharedQueueSuffix
	return createdIs(q, rangeEnd(q), pb.Compare_EQUAL, 0)
}
