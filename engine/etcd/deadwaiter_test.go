package etcd_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// wakeHook is a client's KV that, once armed, runs a function just before
// the next transaction that puts a wake-up key (a shared lock's sw, a
// mutex's w): after the read the transaction's decision rests on, before
// etcd applies it.
type wakeHook struct {
	clientv3.KV
	mu     sync.Mutex
	before func()
	fired  int
}

// arm makes f run before the next transaction that wakes a waiter.
func (h *wakeHook) arm(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before, h.fired = f, 0
}

// run runs the armed function, once, when then wakes a waiter.
func (h *wakeHook) run(then []clientv3.Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.before == nil {
		return
	}
	for _, op := range then {
		if k := string(op.KeyBytes()); op.IsPut() && (strings.HasSuffix(k, "/sw") || strings.HasSuffix(k, "/w")) {
			h.before()
			h.before = nil
			h.fired++
			return
		}
	}
}

func (h *wakeHook) firedTimes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fired
}

func (h *wakeHook) Txn(ctx context.Context) clientv3.Txn {
	return &hookTxn{Txn: h.KV.Txn(ctx), h: h}
}

type hookTxn struct {
	clientv3.Txn
	h    *wakeHook
	then []clientv3.Op
}

func (t *hookTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *hookTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = ops
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *hookTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }
func (t *hookTxn) Commit() (*clientv3.TxnResponse, error) {
	t.h.run(t.then)
	return t.Txn.Commit()
}

// TestSharedWakeDeadWaiter: a semaphore's or RW lock's operation that wakes
// the head of the queue (SetLimit, a release, a force-release, a Leave, a
// grant that wakes the next reader, a waiter that queues behind a head
// never woken) reads the queue, and the head's waiter lease is revoked
// (as etcd does when it runs out: the waiter died) just before the
// transaction that wakes it. The operation succeeds, and wakes the next
// live waiter instead, which is then granted.
func TestSharedWakeDeadWaiter(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	raw := cl.Client(t)
	hooked := cl.Client(t)
	hook := &wakeHook{KV: hooked.KV}
	hooked.KV = hook
	e := etcdengine.New(hooked)
	t.Cleanup(func() { _ = e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	sem := func(name, owner string, weight, limit int) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: owner, Waiter: owner, TTL: 30 * time.Second, WaiterTTL: 30 * time.Second,
			Attempt: owner + "-1", Kind: engine.Semaphore, Limit: limit, Weight: weight}
	}
	rw := func(name, owner string, write bool) engine.AcquireRequest {
		r := sem(name, owner, 1, engine.RWPermits)
		r.Kind = engine.RWLock
		if write {
			r.Weight = engine.RWPermits
		}
		return r
	}
	cases := []struct {
		name string
		// queue holds and queues waiters (a, the one to die, then b) on
		// name, and returns the waiter b's request.
		queue func(t *testing.T, name string) engine.AcquireRequest
		// op is the operation under test, by the hooked engine.
		op func(name string) error
	}{
		{"SetLimit", func(t *testing.T, name string) engine.AcquireRequest {
			mustGrant(t, ctx, e, sem(name, "h", 1, 1))
			mustQueue(t, ctx, cl, sem(name, "a", 1, 1))
			return mustQueue(t, ctx, cl, sem(name, "b", 1, 1))
		}, func(name string) error {
			_, err := e.SetLimit(ctx, name, 2)
			return err
		}},
		{"Release", func(t *testing.T, name string) engine.AcquireRequest {
			mustGrant(t, ctx, e, sem(name, "h", 1, 1))
			mustQueue(t, ctx, cl, sem(name, "a", 1, 1))
			return mustQueue(t, ctx, cl, sem(name, "b", 1, 1))
		}, func(name string) error {
			res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "h", Kind: engine.Semaphore})
			if err == nil && res.Status != engine.Released {
				t.Errorf("Release: %+v, want Released", res)
			}
			return err
		}},
		{"ForceRelease", func(t *testing.T, name string) engine.AcquireRequest {
			mustGrant(t, ctx, e, sem(name, "h", 1, 1))
			mustQueue(t, ctx, cl, sem(name, "a", 1, 1))
			return mustQueue(t, ctx, cl, sem(name, "b", 1, 1))
		}, func(name string) error {
			freed, err := e.ForceRelease(ctx, name)
			if err == nil && !freed {
				t.Error("ForceRelease: nothing freed")
			}
			return err
		}},
		{"Leave", func(t *testing.T, name string) engine.AcquireRequest {
			mustGrant(t, ctx, e, sem(name, "h", 1, 2))
			mustQueue(t, ctx, cl, sem(name, "l", 2, 2)) // heads the queue, does not fit
			mustQueue(t, ctx, cl, sem(name, "a", 1, 2))
			return mustQueue(t, ctx, cl, sem(name, "b", 1, 2))
		}, func(name string) error {
			return e.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "l", Kind: engine.Semaphore})
		}},
		{"GrantWakesNextReader", func(t *testing.T, name string) engine.AcquireRequest {
			mustGrant(t, ctx, e, rw(name, "w", true))
			mustQueue(t, ctx, cl, rw(name, "g", false))
			mustQueue(t, ctx, cl, rw(name, "a", false))
			b := mustQueue(t, ctx, cl, rw(name, "b", false))
			if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "w", Kind: engine.RWLock}); err != nil {
				t.Fatal(err) // wakes g, the head, before the hook is armed
			}
			return b
		}, func(name string) error {
			g, err := e.Acquire(ctx, rw(name, "g", false))
			if err == nil && !g.Acquired {
				t.Errorf("the head reader: %+v, want granted", g)
			}
			return err
		}},
		{"QueueWakesHead", func(t *testing.T, name string) engine.AcquireRequest {
			mustGrant(t, ctx, e, sem(name, "h", 1, 2))
			p := mustQueue(t, ctx, cl, sem(name, "p", 2, 2)) // heads the queue, does not fit
			mustQueue(t, ctx, cl, sem(name, "a", 1, 2))
			b := mustQueue(t, ctx, cl, sem(name, "b", 1, 2))
			revokeWaiter(t, ctx, raw, p) // p dies: a heads the queue, woken by nobody alive
			return b
		}, func(name string) error {
			g, err := e.Acquire(ctx, sem(name, "c", 1, 2))
			if err == nil && (g.Acquired || !g.Queued) {
				t.Errorf("a newcomer behind the queue: %+v, want queued", g)
			}
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "dead-waiter-" + c.name
			t.Cleanup(func() { hook.arm(nil) })
			b := c.queue(t, name)
			a := waiterKey(name, "a")
			resp, err := raw.Get(ctx, a)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("the waiter a's entry: %v, %v", resp, err)
			}
			lease := clientv3.LeaseID(resp.Kvs[0].Lease)
			hook.arm(func() {
				if _, err := raw.Revoke(ctx, lease); err != nil {
					t.Errorf("revoke the waiter a's lease: %v", err)
				}
			})
			if err := c.op(name); err != nil {
				t.Fatalf("with the head's waiter lease gone: %v", err)
			}
			if hook.firedTimes() != 1 {
				t.Fatal("the operation woke nobody: the race was not exercised")
			}
			if wake := get(t, ctx, raw, etcdengine.DefaultPrefix+name+"/sw"); wake != "b" {
				t.Fatalf("the wake-up names %q, want the next live waiter b", wake)
			}
			if resp, err := raw.Get(ctx, a); err != nil || len(resp.Kvs) != 0 {
				t.Fatalf("the dead waiter's entry: %v, %v; want gone", resp, err)
			}
			mustGrant(t, ctx, e, b)
		})
	}
}

// TestMutexWakeDeadWaiter: the mutex's counterpart of
// TestSharedWakeDeadWaiter. A newcomer finds the lock free and its queue's
// head owed it, and wakes and reserves for the head; the head's waiter
// lease is revoked just before that transaction. The newcomer is refused
// without error, and the next live waiter is woken instead, then granted.
func TestMutexWakeDeadWaiter(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	raw := cl.Client(t)
	hooked := cl.Client(t)
	hook := &wakeHook{KV: hooked.KV}
	hooked.KV = hook
	e := etcdengine.New(hooked)
	t.Cleanup(func() { _ = e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	name := "dead-waiter-mutex"
	req := func(owner string) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: owner, Waiter: owner, TTL: 30 * time.Second, WaiterTTL: 30 * time.Second,
			Attempt: owner + "-1", Kind: engine.Mutex, Waiting: true}
	}
	mustGrant(t, ctx, e, req("h"))
	mustQueue(t, ctx, cl, req("a"))
	b := mustQueue(t, ctx, cl, req("b"))
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "h", Kind: engine.Mutex}); err != nil || res.Status != engine.Released {
		t.Fatalf("Release: %+v, %v", res, err)
	}
	resp, err := raw.Get(ctx, etcdengine.DefaultPrefix+name+"/q/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the waiter a's entry: %v, %v", resp, err)
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	hook.arm(func() {
		if _, err := raw.Revoke(ctx, lease); err != nil {
			t.Errorf("revoke the waiter a's lease: %v", err)
		}
	})
	c := req("c")
	c.Waiter, c.Waiting = "", false // TryAcquire
	g, err := e.Acquire(ctx, c)
	if err != nil || g.Acquired {
		t.Fatalf("a newcomer with the head's waiter lease gone: %+v, %v; want refused", g, err)
	}
	if hook.firedTimes() != 1 {
		t.Fatal("the newcomer woke nobody: the race was not exercised")
	}
	if wake := get(t, ctx, raw, etcdengine.DefaultPrefix+name+"/w"); wake != "b" {
		t.Fatalf("the wake-up names %q, want the next live waiter b", wake)
	}
	mustGrant(t, ctx, e, b)
}

// mustGrant asks e for r and fails the test unless it is granted.
func mustGrant(t *testing.T, ctx context.Context, e *etcdengine.Engine, r engine.AcquireRequest) {
	t.Helper()
	g, err := e.Acquire(ctx, r)
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire %s by %s: %+v, %v; want granted", r.Name, r.Owner, g, err)
	}
}

// mustQueue queues r's waiter by an engine of its own (as a process of
// its own would) and returns r; nothing renews its waiter lease after.
func mustQueue(t *testing.T, ctx context.Context, cl *etcdtest.Cluster, r engine.AcquireRequest) engine.AcquireRequest {
	t.Helper()
	e := etcdengine.New(cl.Client(t))
	t.Cleanup(func() { _ = e.Close() })
	g, err := e.Acquire(ctx, r)
	if err != nil || g.Acquired || !g.Queued {
		t.Fatalf("Acquire %s by %s: %+v, %v; want queued", r.Name, r.Waiter, g, err)
	}
	return r
}

// revokeWaiter revokes r's waiter lease, as etcd does when it runs out.
func revokeWaiter(t *testing.T, ctx context.Context, raw *clientv3.Client, r engine.AcquireRequest) {
	t.Helper()
	resp, err := raw.Get(ctx, waiterKey(r.Name, r.Waiter))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the waiter %s's entry: %v, %v", r.Waiter, resp, err)
	}
	if _, err := raw.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
}

func waiterKey(name, waiter string) string {
	return etcdengine.DefaultPrefix + name + "/sq/" + waiter
}

// get returns key's value ("" when absent).
func get(t *testing.T, ctx context.Context, raw *clientv3.Client, key string) string {
	t.Helper()
	resp, err := raw.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}
