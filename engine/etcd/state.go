package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// hold is the value of a lock key.
type hold struct {
	Owner    string `json:"o"`
	Count    int    `json:"c"`
	Attempt  string `json:"a,omitempty"`
	Metadata string `json:"m,omitempty"`
	TTL      int64  `json:"t"` // the ttl of the key's lease, in seconds
	releases
}

// releases mark the releases that last counted a hold down, so that one
// applied without an answer is not repeated (see Release): the ids of the
// last engine.KeptReleaseIDs (Rels), or the one id a version before them
// recorded (Rel).
type releases struct {
	Rel  string            `json:"r,omitempty"`
	Rels engine.ReleaseIDs `json:"rs,omitempty"`
}

// has reports whether the release id counted the hold down.
func (r releases) has(id string) bool { return id != "" && (r.Rel == id || r.Rels.Has(id)) }

// with returns r with id recorded as the newest release.
func (r releases) with(id string) releases {
	rels := r.Rels
	if r.Rel != "" {
		rels = append(engine.ReleaseIDs{r.Rel}, rels...)
	}
	return releases{Rels: rels.With(id)}
}

// entry is the value of a waiter's key in the queue.
type entry struct {
	Fair      bool `json:"f,omitempty"`
	NoReserve bool `json:"n,omitempty"`
	// Reserved marks a waiter the lock was reserved for: once the
	// reservation key is gone (or names another waiter) and the waiter
	// did not take the lock, its reservation lapsed and it leaves the
	// queue.
	Reserved bool `json:"v,omitempty"`
}

// entryOf is the queue entry of r's waiter: fair or never reserved for, as
// r.Order says.
func entryOf(r engine.AcquireRequest) entry {
	return entry{Fair: r.Order == engine.OrderFair, NoReserve: r.Order == engine.OrderNoReserve}
}

// waiterKV is one waiter of a name's queue.
type waiterKV struct {
	id string
	kv *mvccpb.KeyValue
	entry
}

// state is everything stored under one name's prefix, as of one revision.
type state struct {
	name  string
	rev   int64
	lock  *mvccpb.KeyValue // nil when free
	hold  hold
	queue []waiterKV       // live waiters, by arrival (CreateRevision)
	lapse []waiterKV       // waiters whose reservation lapsed: to be dropped
	res   *mvccpb.KeyValue // the reservation in effect, nil when none
	resKV *mvccpb.KeyValue // the reservation key, also when void (its waiter left)
	wake  *mvccpb.KeyValue
	// shared is the kind of a shared lock (Sharer) held under the name,
	// or with waiters queued (they bind the name to their kind, as
	// holders do), 0 when none: a mutex is refused there.
	shared engine.Kind
	// entered: the state was read by the transaction that put the
	// caller's entry in the queue, on a lease renewed for it (enterQueue).
	entered bool
}

// read returns name's state in one linearizable range read.
func (e *Engine) read(ctx context.Context, name string) (*state, error) {
	resp, err := e.get(ctx, "read "+name, e.keys.name(name), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return e.decode(name, resp.Header.Revision, resp.Kvs)
}

// decode builds a state from the keys under name's prefix.
func (e *Engine) decode(name string, rev int64, kvs []*mvccpb.KeyValue) (*state, error) {
	st := &state{name: name, rev: rev}
	var queue []waiterKV
	var cfgKind engine.Kind // the shared lock's stored kind
	sharedWaiter := 0       // the weight of a queued shared waiter, 0: none
	for _, kv := range kvs {
		_, rest, ok := e.keys.parse(string(kv.Key))
		if !ok {
			continue
		}
		switch {
		case rest == lockSuffix:
			if err := json.Unmarshal(kv.Value, &st.hold); err != nil {
				return nil, &ForeignKeyError{Name: name, Key: string(kv.Key), Err: fmt.Errorf("bad value %q: %w", kv.Value, err)}
			}
			st.lock = kv
		case rest == resSuffix:
			st.res, st.resKV = kv, kv
		case rest == wakeSuffix:
			st.wake = kv
		case strings.HasPrefix(rest, holderSuffix):
			var h sharedHold
			if json.Unmarshal(kv.Value, &h) == nil && h.Kind != 0 {
				st.shared = h.Kind
			}
		case rest == configSuffix:
			var c sharedConfig
			if json.Unmarshal(kv.Value, &c) == nil {
				cfgKind = c.Kind
			}
		case strings.HasPrefix(rest, sharedQueueSuffix):
			var w sharedEntry
			if json.Unmarshal(kv.Value, &w) == nil {
				sharedWaiter = max(w.Weight, 1)
			}
		case strings.HasPrefix(rest, queueSuffix):
			w := waiterKV{id: unescape(rest[len(queueSuffix):]), kv: kv}
			if err := json.Unmarshal(kv.Value, &w.entry); err != nil {
				return nil, fmt.Errorf("etcd: waiter %q of %q: bad value %q: %w", w.id, name, kv.Value, err)
			}
			queue = append(queue, w)
		}
	}
	if st.shared == 0 && sharedWaiter > 0 {
		// Waiters of a shared lock are queued (their keys go with their
		// leases: live ones): the name is that lock's kind, stored with
		// it (a writer's weight tells an RW lock whose kind expired).
		switch {
		case cfgKind != 0:
			st.shared = cfgKind
		case sharedWaiter == engine.RWPermits:
			st.shared = engine.RWLock
		default:
			st.shared = engine.Semaphore
		}
	}
	slices.SortFunc(queue, func(a, b waiterKV) int { return int(a.kv.CreateRevision - b.kv.CreateRevision) })
	for _, w := range queue {
		if w.Reserved && (st.res == nil || string(st.res.Value) != w.id) {
			st.lapse = append(st.lapse, w)
			continue
		}
		st.queue = append(st.queue, w)
	}
	if st.res != nil && st.waiter(string(st.res.Value)) == nil {
		st.res = nil // its waiter left the queue: void, as engine/memory drops it
	}
	if len(st.queue) > 0 {
		e.busy.sawQueue(name)
	} else {
		e.busy.sawNoQueue(name)
	}
	return st, nil
}

// head returns the first waiter, nil when nobody waits.
func (st *state) head() *waiterKV {
	if len(st.queue) == 0 {
		return nil
	}
	return &st.queue[0]
}

// waiter returns the live entry of id, nil when it is not queued.
func (st *state) waiter(id string) *waiterKV {
	for i := range st.queue {
		if st.queue[i].id == id {
			return &st.queue[i]
		}
	}
	return nil
}

// reservedFor returns the waiter the lock is reserved for, "" when none.
func (st *state) reservedFor() string {
	if st.res == nil {
		return ""
	}
	return string(st.res.Value)
}

// unchanged returns the comparisons that hold while the parts of the state
// a decision rests on are unchanged: the lock, the reservation and the head
// of the queue (and the waiter's own entry, when given).
func (st *state) unchanged(e *Engine, waiter string) []clientv3.Cmp {
	cmps := []clientv3.Cmp{
		modifiedAt(e.keys.lock(st.name), modRev(st.lock)),
		modifiedAt(e.keys.res(st.name), modRev(st.resKV)),
	}
	if h := st.head(); h != nil {
		cmps = append(cmps, modifiedAt(string(h.kv.Key), h.kv.ModRevision))
	}
	if waiter != "" {
		var own *mvccpb.KeyValue
		if w := st.waiter(waiter); w != nil {
			own = w.kv
		}
		if h := st.head(); own != nil && h != nil && h.id == waiter {
			return cmps // compared as the head already
		}
		cmps = append(cmps, modifiedAt(e.keys.waiter(st.name, waiter), modRev(own)))
	}
	return cmps
}

func modRev(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings, ints and bools
	}
	return string(b)
}

// position returns the key of the waiter before waiter in st's queue ("" when
// waiter heads it), and whether waiter is queued at all.
func (st *state) position(waiter string) (pred string, queued bool) {
	for i, w := range st.queue {
		if w.id == waiter {
			if i == 0 {
				return "", true
			}
			return string(st.queue[i-1].kv.Key), true
		}
	}
	return "", false
}
