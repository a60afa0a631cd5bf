package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// A countdown latch (engine.Latcher) is the key <name>/latch, beside the
// lock's keys under the name's prefix (so the name's watch sees it), with
// no lease: its value is the count and the ids of the last CountDowns
// applied. Each change is a transaction on the key's mod revision; at
// zero the key is deleted, and that deletion wakes the name's plain
// subscribers (subscribe.go).
const latchSuffix = "latch"

// latchIDs is how many CountDown ids a latch remembers: a resent copy of
// any of them counts nothing.
const latchIDs = 16

var _ engine.Latcher = (*Engine)(nil)

func (k keyspace) latch(name string) string { return k.name(name) + latchSuffix }

// latchValue is a latch key's value.
type latchValue struct {
	N   int64    `json:"n"`
	IDs []string `json:"ids,omitempty"` // the last CountDowns applied, oldest first
	Set string   `json:"s,omitempty"`   // the mark of the SetCount call that set it
}

// SetCount implements engine.Latcher: one transaction that creates the key
// only if it is absent, marked with this call. An attempt applied without
// an answer makes the next one find the key: the call then reads it, and
// reports true if the mark is its own.
func (e *Engine) SetCount(ctx context.Context, name string, count int64) (bool, error) {
	if err := e.check(ctx); err != nil {
		return false, err
	}
	if err := engine.CheckLatchCount(count); err != nil {
		return false, err
	}
	key, mark := e.keys.latch(name), releaseMark()
	ok, unsure, err := e.commitUnsure(ctx, "latch set "+name,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		clientv3.OpPut(key, mustJSON(latchValue{N: count, Set: mark})))
	if err != nil || ok || !unsure {
		return ok, err
	}
	kv, v, err := e.readLatch(ctx, name)
	return err == nil && kv != nil && v.Set == mark, err
}

// CountDown implements engine.Latcher: read the key, then write it (or
// delete it at zero) if its mod revision is still the one read, else read
// again. An attempt applied without an answer makes the next one's
// comparison fail; the read then finds id among the last applied (or the
// key gone at zero) and counts nothing.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	key := e.keys.latch(name)
	for range maxConflicts {
		kv, v, err := e.readLatch(ctx, name)
		if err != nil || kv == nil {
			return 0, err
		}
		if id != "" && slices.Contains(v.IDs, id) {
			return v.N, nil // a resent copy
		}
		v.N--
		write := clientv3.OpDelete(key)
		if v.N > 0 {
			if id != "" {
				v.IDs = append(v.IDs, id)
				v.IDs = v.IDs[max(0, len(v.IDs)-latchIDs):]
			}
			write = clientv3.OpPut(key, mustJSON(v))
		}
		ok, err := e.commit(ctx, "latch count down "+name,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)}, write)
		if err != nil || ok {
			return v.N, err
		}
	}
	return 0, conflict("latch count down", name)
}

// Count implements engine.Latcher.
func (e *Engine) Count(ctx context.Context, name string) (int64, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	kv, v, err := e.readLatch(ctx, name)
	if err != nil || kv == nil {
		return 0, err
	}
	return v.N, nil
}

// readLatch returns name's latch key and value; kv is nil when the latch
// does not exist (its count is zero).
func (e *Engine) readLatch(ctx context.Context, name string) (*mvccpb.KeyValue, latchValue, error) {
	var v latchValue
	resp, err := e.get(ctx, "latch read "+name, e.keys.latch(name))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, v, err
	}
	kv := resp.Kvs[0]
	if err := json.Unmarshal(kv.Value, &v); err != nil || v.N < 1 {
		return nil, v, fmt.Errorf("etcd: latch %q: bad value %q", name, kv.Value)
	}
	return kv, v, nil
}
