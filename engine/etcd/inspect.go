package etcd

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// Inspect implements engine.Engine: one read of the name's keys (a
// mutex's and a shared lock's alike), then the holders' lease time to live
// (whole seconds, so TTL is rounded up to the next second and capped at the
// lease's ttl), and the view engine.Describe picks. HighWater is the
// holders' token: tokens are revisions of the whole cluster, so no
// per-name high-water key is kept, and none is remembered after a release.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	if err := e.check(ctx); err != nil {
		return engine.Info{}, err
	}
	resp, err := e.get(ctx, "read "+name, e.keys.name(name), clientv3.WithPrefix())
	if err != nil {
		return engine.Info{}, err
	}
	st, err := e.decode(name, resp.Header.Revision, resp.Kvs)
	if err != nil {
		return engine.Info{}, err
	}
	sst, err := e.decodeShared(name, resp.Header.Revision, resp.Kvs)
	if err != nil {
		return engine.Info{}, err
	}
	mutex, err := e.info(ctx, st)
	if err != nil {
		return engine.Info{}, err
	}
	shared, err := e.sharedInfo(ctx, sst)
	if err != nil {
		return engine.Info{}, err
	}
	return engine.Describe(mutex, shared), nil
}

func (e *Engine) info(ctx context.Context, st *state) (engine.Info, error) {
	info := engine.Info{Name: st.name, Waiters: len(st.queue), Queue: listQueue(st.queue, func(w waiterKV) string { return w.id })}
	if st.lock == nil {
		return info, nil
	}
	left, err := e.timeLeft(ctx, clientv3.LeaseID(st.lock.Lease))
	if err != nil {
		return engine.Info{}, err
	}
	if left < 0 { // expired between the two reads
		return engine.Info{Name: st.name, Waiters: info.Waiters, Queue: info.Queue}, nil
	}
	info.Held = true
	info.Owner, info.Count, info.Metadata = st.hold.Owner, st.hold.Count, st.hold.Metadata
	info.Token = uint64(st.lock.CreateRevision)
	info.HighWater = info.Token
	info.TTL = left
	return info, nil
}

// List implements engine.Lister: a range read over the keys of the names
// that start with prefix, in key order (a shared lock found by its keys is
// read as Inspect reads it, and may be listed again on the next page
// when its keys span two), limit*4 keys a page (a name's
// waiters are keys too, so a page may hold fewer locks, even none). The
// cursor is the last key read.
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	resp, next, err := e.page(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	var infos []engine.Info
	var shared, mutexes []string
	keys := map[string][]*mvccpb.KeyValue{} // the page's keys of each name
	for _, kv := range resp.Kvs {
		name, rest, ok := e.keys.parse(string(kv.Key))
		if !ok {
			continue
		}
		keys[name] = append(keys[name], kv)
		switch {
		case rest == configSuffix || strings.HasPrefix(rest, holderSuffix) || strings.HasPrefix(rest, sharedQueueSuffix):
			if len(shared) == 0 || shared[len(shared)-1] != name {
				shared = append(shared, name)
			}
		case rest == lockSuffix:
			mutexes = append(mutexes, name)
		}
	}
	var first, last string // the page's first and last names: their keys may go on past it
	if n := len(resp.Kvs); n > 0 {
		first, _, _ = e.keys.parse(string(resp.Kvs[0].Key))
		last, _, _ = e.keys.parse(string(resp.Kvs[n-1].Key))
	}
	for _, name := range mutexes {
		// A held mutex with its waiters, as Inspect describes it, from the
		// page's keys of the name; a name at either end of the page is
		// read whole.
		var st *state
		var err error
		if name == first && cursor != "" || name == last && resp.More {
			st, err = e.read(ctx, name)
		} else {
			st, err = e.decode(name, resp.Header.Revision, keys[name])
		}
		if err != nil {
			return nil, "", err
		}
		if st.lock == nil {
			continue
		}
		info, err := e.info(ctx, st)
		if err != nil {
			return nil, "", err
		}
		if info.Held {
			infos = append(infos, info)
		}
	}
	more, err := e.sharedListed(ctx, shared)
	if err != nil {
		return nil, "", err
	}
	return append(infos, more...), next, nil
}

// page reads one page of keys under the names that start with prefix.
func (e *Engine) page(ctx context.Context, prefix, cursor string, limit int) (*clientv3.GetResponse, string, error) {
	from := e.keys.root + escape(prefix)
	end := rangeEnd(from)
	if cursor != "" {
		if !strings.HasPrefix(cursor, from) {
			return nil, "", &engine.ArgumentError{Arg: "cursor", Reason: "not a cursor of this listing"}
		}
		from = cursor + "\x00"
	}
	resp, err := e.get(ctx, "list", from, clientv3.WithRange(end), clientv3.WithLimit(int64(max(limit, 1)*4)))
	if err != nil {
		return nil, "", err
	}
	next := ""
	if resp.More && len(resp.Kvs) > 0 {
		next = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
	return resp, next, nil
}

// Leaks implements engine.LeakFinder: keys under the engine's prefix with
// no lease (distlock puts every key on one, so such a key was written by
// someone else and never goes away), and lock keys whose lease ttl is longer
// than maxTTL.
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	resp, next, err := e.page(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	var leaks []engine.Leak
	for _, kv := range resp.Kvs {
		name, rest, ok := e.keys.parse(string(kv.Key))
		kind := engine.LeakOther
		if ok && rest == lockSuffix {
			kind = engine.LeakLock
		} else {
			name = ""
		}
		if kv.Lease == 0 {
			leaks = append(leaks, engine.Leak{Key: string(kv.Key), Name: name, Kind: kind, Type: "key", TTL: -1})
			continue
		}
		if kind != engine.LeakLock {
			continue
		}
		var h hold
		if json.Unmarshal(kv.Value, &h) == nil && time.Duration(h.TTL)*time.Second > maxTTL {
			leaks = append(leaks, engine.Leak{Key: string(kv.Key), Name: name, Kind: kind, Type: "key",
				TTL: time.Duration(h.TTL) * time.Second})
		}
	}
	return leaks, next, nil
}

// listQueue lists the first engine.MaxQueueListed waiters of queue (in
// arrival order) for Info.Queue. etcd records no arrival time, so Waited
// is 0: the order, not the time, is known.
func listQueue[W any](queue []W, id func(W) string) []engine.Waiter {
	var out []engine.Waiter
	for _, w := range queue[:min(len(queue), engine.MaxQueueListed)] {
		out = append(out, engine.Waiter{ID: id(w)})
	}
	return out
}
