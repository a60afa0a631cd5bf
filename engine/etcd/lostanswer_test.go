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

// lostAnswers is a fault on the way back from etcd: once armed, the next
// write transaction that puts or deletes a lock, holder or latch key is applied
// by etcd, but its answer never comes (the call waits until its attempt's
// deadline), as when the member that forwarded it stops.
type lostAnswers struct {
	clientv3.KV
	mu    sync.Mutex
	armed bool
	lost  int
}

// lostAnswerEngine starts one etcd member and returns an engine on a
// client whose answers faults loses when armed, with a short attempt
// deadline (the lost answer's attempt ends there and is sent again).
func lostAnswerEngine(t *testing.T) (*etcdengine.Engine, *clientv3.Client, *lostAnswers) {
	cli := etcdtest.Start(t, 1).Client(t)
	faults := &lostAnswers{KV: cli.KV}
	cli.KV = faults
	e := etcdengine.New(cli, etcdengine.WithAttemptTimeout(300*time.Millisecond))
	t.Cleanup(func() { _ = e.Close() })
	return e, cli, faults
}

func (l *lostAnswers) arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = true
}

// take reports whether a transaction with then ops loses its answer.
func (l *lostAnswers) take(then []clientv3.Op) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.armed {
		return false
	}
	for _, op := range then {
		k := string(op.KeyBytes())
		if (op.IsPut() || op.IsDelete()) && (strings.HasSuffix(k, "/lock") || strings.HasSuffix(k, "/latch") || strings.Contains(k, "/h/")) {
			l.armed = false
			l.lost++
			return true
		}
	}
	return false
}

func (l *lostAnswers) Txn(ctx context.Context) clientv3.Txn {
	return &lostTxn{l: l, ctx: ctx}
}

type lostTxn struct {
	l           *lostAnswers
	ctx         context.Context
	cmps        []clientv3.Cmp
	then, other []clientv3.Op
}

func (t *lostTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.cmps = cs; return t }
func (t *lostTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.then = ops; return t }
func (t *lostTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.other = ops; return t }

func (t *lostTxn) Commit() (*clientv3.TxnResponse, error) {
	if !t.l.take(t.then) {
		return t.l.KV.Txn(t.ctx).If(t.cmps...).Then(t.then...).Else(t.other...).Commit()
	}
	if _, err := t.l.KV.Txn(context.WithoutCancel(t.ctx)).If(t.cmps...).Then(t.then...).Else(t.other...).Commit(); err != nil {
		return nil, err
	}
	<-t.ctx.Done() // applied; the answer is lost
	return nil, t.ctx.Err()
}

// TestLostAnswers: a write applied by etcd whose answer is lost is sent
// again (after its attempt's deadline) and never applied twice, and the
// call answers what happened: a grant is the one grant (count 1, its
// token), a release of the last hold is Released (not "not held"), the
// release of one of two holds leaves one (not none); the same for a
// semaphore's holder.
func TestLostAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, cli, faults := lostAnswerEngine(t)
	name := lockName(t)
	req := engine.AcquireRequest{Name: name, Owner: "o", TTL: 10 * time.Second, Attempt: "a1"}

	faults.arm()
	g, err := e.Acquire(ctx, req)
	if err != nil || !g.Acquired || g.Count != 1 {
		t.Fatalf("grant whose answer was lost: %+v, %v; want granted, count 1", g, err)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil || info.Owner != "o" || info.Count != 1 || info.Token != g.Token {
		t.Fatalf("after the grant: %+v, %v; want o, count 1, token %d", info, err, g.Token)
	}
	key, err := cli.Get(ctx, etcdengine.DefaultPrefix+name+"/lock")
	if err != nil || len(key.Kvs) != 1 {
		t.Fatalf("the lock key: %v, %v", key, err)
	}
	lease := clientv3.LeaseID(key.Kvs[0].Lease)
	req.Attempt = "a2"
	if g, err = e.Acquire(ctx, req); err != nil || g.Count != 2 {
		t.Fatalf("re-entry: %+v, %v", g, err)
	}

	faults.arm()
	res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o"})
	if err != nil || res.Status != engine.Released || res.Remaining != 1 {
		t.Fatalf("release of one of two holds, its answer lost: %+v, %v; want released, 1 left", res, err)
	}
	if info, err = e.Inspect(ctx, name); err != nil || !info.Held || info.Count != 1 {
		t.Fatalf("after releasing one of two holds: %+v, %v; want held once", info, err)
	}

	faults.arm()
	res, err = e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o"})
	if err != nil || res.Status != engine.Released {
		t.Fatalf("release of the last hold, its answer lost: %+v, %v; want released", res, err)
	}
	if info, err = e.Inspect(ctx, name); err != nil || info.Held {
		t.Fatalf("after the last release: %+v, %v; want free", info, err)
	}
	// The grant's lease was named by a write whose answer was lost: an
	// abandoned attempt could put the key again late, so the release
	// revokes the lease rather than keep it for the next grant (it would
	// live for its ttl, 10 s, there).
	waitFor(t, req.TTL/2, "the revocation of the lease of the grant whose answer was lost", func() bool {
		ttl, err := cli.TimeToLive(ctx, lease)
		return err == nil && ttl.TTL == -1
	})

	sem := engine.AcquireRequest{Name: name + "-sem", Owner: "s", TTL: 10 * time.Second, Attempt: "b1", Kind: engine.Semaphore, Limit: 2, Weight: 1}
	faults.arm()
	if g, err = e.Acquire(ctx, sem); err != nil || !g.Acquired || g.Count != 1 {
		t.Fatalf("semaphore grant whose answer was lost: %+v, %v", g, err)
	}
	sem.Attempt = "b2"
	if g, err = e.Acquire(ctx, sem); err != nil || g.Count != 2 {
		t.Fatalf("semaphore re-entry: %+v, %v", g, err)
	}
	faults.arm()
	if res, err = e.Release(ctx, engine.ReleaseRequest{Name: sem.Name, Owner: "s", Kind: engine.Semaphore}); err != nil || res.Status != engine.Released || res.Remaining != 1 {
		t.Fatalf("semaphore release of one of two holds, its answer lost: %+v, %v", res, err)
	}
	faults.arm()
	if res, err = e.Release(ctx, engine.ReleaseRequest{Name: sem.Name, Owner: "s", Kind: engine.Semaphore}); err != nil || res.Status != engine.Released {
		t.Fatalf("semaphore release of the last hold, its answer lost: %+v, %v", res, err)
	}
	if info, err = e.Inspect(ctx, sem.Name); err != nil || info.Held {
		t.Fatalf("after the semaphore's last release: %+v, %v; want free", info, err)
	}
	if faults.lost != 6 {
		t.Fatalf("%d answers lost, want 6: the fault did not apply where the test meant it", faults.lost)
	}
}
