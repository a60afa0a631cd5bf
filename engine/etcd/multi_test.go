package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// testCtx returns a context that ends after d or with the test.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// assertFreeOn checks that nobody holds names on e and nobody queues.
func assertFreeOn(t *testing.T, e *etcdengine.Engine, names ...string) {
	t.Helper()
	for _, n := range names {
		info, err := e.Inspect(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if info.Held || info.Waiters != 0 {
			t.Errorf("%q: held %v by %q, %d waiters; want free, no waiter", n, info.Held, info.Owner, info.Waiters)
		}
	}
}

// TestMultiAllOrNothing: a set that overlaps a held name, a name held as
// a semaphore, or a queued name is refused whole, naming the name that
// blocks it, and leaves every other name free; bad input changes nothing.
func TestMultiAllOrNothing(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx := testCtx(t, 60*time.Second)
	e := etcdengine.New(cl.Client(t))
	defer e.Close()

	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "b", Owner: "x", Attempt: "x", TTL: 5 * time.Second})
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire b: %+v, %v", g, err)
	}
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, "a", "b", "c"))
	if err != nil || mg.Acquired || mg.Blocked != 1 || mg.Grant.Holder != "x" || mg.Grant.HolderTTL <= 0 {
		t.Fatalf("AcquireMulti over held b: %+v, %v; want refused at 1 by x", mg, err)
	}
	assertFreeOn(t, e, "a", "c")

	// A waiter queued on a free name keeps it: the set does not go ahead.
	sg, err := e.Acquire(ctx, engine.AcquireRequest{Name: "sem", Owner: "h",
		Attempt: "h", OneOff: true, TTL: 5 * time.Second, Kind: engine.Semaphore, Limit: 1, Weight: 1})
	if err != nil || !sg.Acquired {
		t.Fatalf("Acquire (shared): %+v, %v", sg, err)
	}
	_, err = e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, "a", "sem"))
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("AcquireMulti over a semaphore: %v; want a kind error", err)
	}
	assertFreeOn(t, e, "a")

	if _, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, "a", "c", "a")); !errors.As(err, &ae) {
		t.Errorf("AcquireMulti with a repeated name: %v; want *engine.ArgumentError", err)
	}
	many := make([]string, 33)
	for i := range many {
		many[i] = fmt.Sprintf("many/%d", i)
	}
	if _, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, many...)); !errors.Is(err, engine.ErrNotAtomic) {
		t.Errorf("AcquireMulti of 33 names: %v; want engine.ErrNotAtomic", err)
	}
	if _, err := e.ReleaseMulti(ctx, enginetest.ReleaseRequests([]string{"a", "a"}, "s")); !errors.As(err, &ae) {
		t.Errorf("ReleaseMulti with a repeated name: %v; want *engine.ArgumentError", err)
	}
	assertFreeOn(t, e, append(many, "a", "c")...)

	// A queued waiter on a free name: c queues behind x on b, x releases
	// (b is now kept for the head), and a set with b is refused as Reserved.
	q, err := e.Acquire(ctx, engine.AcquireRequest{Name: "b", Owner: "w", Attempt: "w", TTL: 5 * time.Second,
		Waiter: "w", WaiterTTL: 5 * time.Second})
	if err != nil || q.Acquired || !q.Queued {
		t.Fatalf("queue on b: %+v, %v", q, err)
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: "b", Owner: "x"}); err != nil || r.Status != engine.Released {
		t.Fatalf("Release b: %+v, %v", r, err)
	}
	mg, err = e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, "a", "b"))
	if err != nil || mg.Acquired || mg.Blocked != 1 || !mg.Grant.Reserved {
		t.Fatalf("AcquireMulti over queued b: %+v, %v; want refused at 1, reserved", mg, err)
	}
	assertFreeOn(t, e, "a")
}

// TestMultiTokensAndRelease: the set's tokens are above every earlier
// token of each name and below every later one; ReleaseMulti frees the
// whole set in one call; a set through the Client takes the same path.
func TestMultiTokensAndRelease(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx := testCtx(t, 60*time.Second)
	e := etcdengine.New(cl.Client(t))
	defer e.Close()

	single := func(name string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "one", Attempt: "one", OneOff: true, TTL: 5 * time.Second})
		if err != nil || !g.Acquired {
			t.Fatalf("Acquire %s: %+v, %v", name, g, err)
		}
		if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "one"}); err != nil || r.Status != engine.Released {
			t.Fatalf("Release %s: %+v, %v", name, r, err)
		}
		return g.Token
	}
	before := single("t/a")
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, "t/a", "t/b", "t/c"))
	if err != nil || !mg.Acquired || len(mg.Tokens) != 3 {
		t.Fatalf("AcquireMulti: %+v, %v", mg, err)
	}
	if mg.Tokens[0] <= before {
		t.Errorf("set token of t/a %d, not above the earlier %d", mg.Tokens[0], before)
	}
	res, err := e.ReleaseMulti(ctx, enginetest.ReleaseRequests([]string{"t/a", "t/b", "t/c"}, "s"))
	if err != nil || len(res) != 3 {
		t.Fatalf("ReleaseMulti: %+v, %v", res, err)
	}
	for i, r := range res {
		if r.Status != engine.Released {
			t.Errorf("ReleaseMulti[%d]: %+v; want Released", i, r)
		}
	}
	assertFreeOn(t, e, "t/a", "t/b", "t/c")
	if after := single("t/b"); after <= mg.Tokens[1] {
		t.Errorf("token of t/b %d after the set's %d", after, mg.Tokens[1])
	}
	// Released again: nothing held.
	res, err = e.ReleaseMulti(ctx, enginetest.ReleaseRequests([]string{"t/a", "t/b"}, "s"))
	if err != nil || res[0].Status != engine.NotHeld || res[1].Status != engine.NotHeld {
		t.Errorf("ReleaseMulti again: %+v, %v; want NotHeld", res, err)
	}

	c := distlock.New(e)
	defer c.Close()
	set, err := c.TryAcquireAll(ctx, []string{"t/c", "t/a"})
	if err != nil {
		t.Fatal(err)
	}
	if set.Token("t/a") <= mg.Tokens[0] || set.Token("t/c") <= mg.Tokens[2] {
		t.Errorf("Client set tokens %v not above the engine set's %v", set.Tokens(), mg.Tokens)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertFreeOn(t, e, "t/a", "t/c")
}

// TestMultiNoDeadlock: Clients on engines of their own, whose sets form a
// ring listed in opposite orders (enginetest.CycleSets), all finish their
// rounds within a bound, with mutual exclusion on every name.
func TestMultiNoDeadlock(t *testing.T) {
	const clients, rounds = 6, 8
	cl := etcdtest.Start(t, 1)
	cs := make([]*distlock.Client, clients)
	for i := range cs {
		e := etcdengine.New(cl.Client(t))
		cs[i] = distlock.New(e)
		t.Cleanup(func() { _ = cs[i].Close(); _ = e.Close() })
	}
	enginetest.SetCycles(t, testCtx(t, 90*time.Second), cs, "cycle/", rounds, distlock.WithTTL(5*time.Second))
}

// TestMultiLostAnswer: a set's grant applied by etcd whose answer is lost
// is sent again and found to be the set's own: granted (not refused by
// itself), each token its key's CreateRevision; the set's release frees
// every name and revokes the leases a late attempt could use.
func TestMultiLostAnswer(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx := testCtx(t, 60*time.Second)
	cli := cl.Client(t)
	faults := &lostAnswers{KV: cli.KV}
	cli.KV = faults
	e := etcdengine.New(cli, etcdengine.WithAttemptTimeout(300*time.Millisecond))
	t.Cleanup(func() { _ = e.Close() })

	names := []string{"lost-a", "lost-b"}
	faults.arm()
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, names...))
	if err != nil || !mg.Acquired || len(mg.Tokens) != 2 {
		t.Fatalf("set grant whose answer was lost: %+v, %v; want granted", mg, err)
	}
	if faults.lost != 1 {
		t.Fatalf("%d answers lost, want 1: the fault did not apply", faults.lost)
	}
	var leases []clientv3.LeaseID
	for i, n := range names {
		key, err := cli.Get(ctx, etcdengine.DefaultPrefix+n+"/lock")
		if err != nil || len(key.Kvs) != 1 || uint64(key.Kvs[0].CreateRevision) != mg.Tokens[i] {
			t.Fatalf("%s's key: %v, %v; want created at token %d", n, key, err, mg.Tokens[i])
		}
		leases = append(leases, clientv3.LeaseID(key.Kvs[0].Lease))
	}
	res, err := e.ReleaseMulti(ctx, enginetest.ReleaseRequests(names, "s"))
	if err != nil || res[0].Status != engine.Released || res[1].Status != engine.Released {
		t.Fatalf("ReleaseMulti: %+v, %v", res, err)
	}
	assertFreeOn(t, e, names...)
	waitFor(t, 5*time.Second, "the revocation of the set's leases", func() bool {
		for _, id := range leases {
			if ttl, err := cli.TimeToLive(ctx, id); err != nil || ttl.TTL != -1 {
				return false
			}
		}
		return true
	})
}

// tooManyOps answers every transaction of more than max comparisons as a
// server run with --max-txn-ops max does, changing nothing.
type tooManyOps struct {
	clientv3.KV
	max int
}

func (k tooManyOps) Txn(ctx context.Context) clientv3.Txn {
	return &limitTxn{Txn: k.KV.Txn(ctx), max: k.max}
}

type limitTxn struct {
	clientv3.Txn
	max, cmps int
}

func (t *limitTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = len(cs)
	t.Txn = t.Txn.If(cs...)
	return t
}
func (t *limitTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *limitTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *limitTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.cmps > t.max {
		return nil, rpctypes.ErrTooManyOps
	}
	return t.Txn.Commit()
}

// TestMultiTooManyOps: on a server whose --max-txn-ops is below a set's
// comparisons, the set is engine.ErrNotAtomic (nothing held, its leases
// kept for reuse), and TryAcquireAll takes it name by name.
func TestMultiTooManyOps(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx := testCtx(t, 60*time.Second)
	cli := cl.Client(t)
	cli.KV = tooManyOps{KV: cli.KV, max: 4}
	e := etcdengine.New(cli)
	t.Cleanup(func() { _ = e.Close() })
	names := []string{"ops-a", "ops-b", "ops-c"}
	if _, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", 5*time.Second, names...)); !errors.Is(err, engine.ErrNotAtomic) {
		t.Fatalf("AcquireMulti of 6 comparisons on a limit of 4: %v; want engine.ErrNotAtomic", err)
	}
	assertFreeOn(t, e, names...)
	c := distlock.New(e)
	defer c.Close()
	set, err := c.TryAcquireAll(ctx, names)
	if err != nil {
		t.Fatalf("TryAcquireAll: %v; want the set, name by name", err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertFreeOn(t, e, names...)
}
