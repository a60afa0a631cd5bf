package etcd

import (
	"context"
	"encoding/json"
	"slices"
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
// that start with prefix, in key order, cut at the end of a name (see page),
// so that each name is on one page only and comes with all its keys: a held
// mutex with its waiters, as Inspect describes it, from the page's keys of
// the name; a shared lock read as Inspect reads it. A page holds about
// limit*4 keys (a name's waiters and holders are keys too, so a page may hold
// fewer locks, even none), sorted by name. Pages follow one another in key
// order, the order of the escaped names followed by '/'.
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	kvs, rev, next, err := e.page(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	var infos []engine.Info
	var shared, mutexes []string
	keys := map[string][]*mvccpb.KeyValue{} // the page's keys of each name
	for _, kv := range kvs {
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
	for _, name := range mutexes {
		st, err := e.decode(name, rev, keys[name])
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
	infos = append(infos, more...)
	slices.SortStableFunc(infos, func(a, b engine.Info) int { return strings.Compare(a.Name, b.Name) })
	return infos, next, nil
}

// page reads one page of the keys under the names that start with prefix,
// in key order, as of one read: about limit*4 keys, cut at the end of a
// name, so that no name's keys are split between two pages. When the keys
// of one name fill the page (its holders and waiters outnumber limit*4),
// the page is that name's keys, read whole. next is a key of the page's
// last name ("" after the last page), and the next page starts after every
// key of that name (nameRange): a name is on one page only, whatever keys
// it gains or loses between pages, and a name whose keys were not on a
// page is on a later one. A key not shaped like a name's keys is a name of
// its own.
func (e *Engine) page(ctx context.Context, prefix, cursor string, limit int) (kvs []*mvccpb.KeyValue, rev int64, next string, err error) {
	from := e.keys.root + escape(prefix)
	end := rangeEnd(from)
	if cursor != "" {
		if !strings.HasPrefix(cursor, from) {
			return nil, 0, "", &engine.ArgumentError{Arg: "cursor", Reason: "not a cursor of this listing"}
		}
		_, from = e.keys.nameRange(cursor)
	}
	resp, err := e.get(ctx, "list", from, clientv3.WithRange(end), clientv3.WithLimit(int64(max(limit, 1)*4)))
	if err != nil {
		return nil, 0, "", err
	}
	kvs, rev = resp.Kvs, resp.Header.Revision
	if !resp.More || len(kvs) == 0 {
		return kvs, rev, "", nil
	}
	last := string(kvs[len(kvs)-1].Key)
	start, stop := e.keys.nameRange(last)
	cut := len(kvs) // the last name's keys may go on past the page: leave them to the next
	for cut > 0 && string(kvs[cut-1].Key) >= start {
		cut--
	}
	if cut > 0 {
		return kvs[:cut], rev, string(kvs[cut-1].Key), nil
	}
	whole, err := e.get(ctx, "list", start, clientv3.WithRange(stop))
	if err != nil {
		return nil, 0, "", err
	}
	return whole.Kvs, whole.Header.Revision, last, nil
}

// nameRange returns the range [start, end) of the keys of the name key
// belongs to: every key under the name's prefix, spelled as in key; a key
// not shaped like a name's (see keyspace.parse) is a range of its own.
func (k keyspace) nameRange(key string) (start, end string) {
	if s, ok := strings.CutPrefix(key, k.root); ok {
		if esc, _, found := strings.Cut(s, "/"); found {
			start = k.root + esc + "/"
			return start, rangeEnd(start)
		}
	}
	return key, key + "\x00"
}

// Leaks implements engine.LeakFinder: keys under the engine's prefix with
// no lease (distlock puts every key on one, so such a key was written by
// someone else and never goes away), and lock keys whose lease ttl is longer
// than maxTTL.
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	kvs, _, next, err := e.page(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	var leaks []engine.Leak
	for _, kv := range kvs {
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
