package etcd_test

// A stranger's tests of the less-travelled kinds on etcd, through the
// public Client, on one member and on three (Clients on chosen members):
// enginetest.RunKindsAcross (latches, elections, semaphores with SetLimit
// racing acquires, RW locks across members, AcquireAll over names held as
// other kinds, the admin calls on those kinds; also run on ZooKeeper), and
// the latch across etcd's own faults (a leader kill, a majority stopped).

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestStrangerKindsEtcd runs the kinds on three members, a Client on
// each, then the latch's faults (the leader killed and restarted, two
// members stopped).
func TestStrangerKindsEtcd(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	c := []*distlock.Client{memberClient(t, cl, 0), memberClient(t, cl, 1), memberClient(t, cl, 2)}
	strangerKindsEtcd(t, cl, c)
	t.Run("LatchAcrossFaults", func(t *testing.T) { strangerEtcdLatchFaults(t, cl, c) })
}

// TestStrangerKindsEtcd1 runs the kinds on one member, three Clients on
// engines (and etcd clients) of their own.
func TestStrangerKindsEtcd1(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	c := []*distlock.Client{memberClient(t, cl, 0), memberClient(t, cl, 0), memberClient(t, cl, 0)}
	strangerKindsEtcd(t, cl, c)
}

func strangerKindsEtcd(t *testing.T, cl *etcdtest.Cluster, c []*distlock.Client) {
	g := &gatedEtcd{Engine: etcdengine.New(cl.Client(t)), p: &pausable{}}
	a := distlock.New(g)
	t.Cleanup(func() { _ = a.Close() })
	enginetest.RunKindsAcross(t, enginetest.KindsAcross{Clients: c, Admin: etcdengine.New(cl.Client(t)),
		Paused: a, PausedEngine: g, Pause: g.p.pause, Resume: g.p.resume, TermTTL: 2 * time.Second})
}

// gatedEtcd is the etcd engine whose renewals and releases block while p
// is paused (a stopped process's), every other method its own (Proclaim's
// SetMetadata, the queue, ...).
type gatedEtcd struct {
	*etcdengine.Engine
	p *pausable
}

func (g *gatedEtcd) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := g.p.gate(ctx); err != nil {
		return nil, err
	}
	return g.Engine.Extend(ctx, rs)
}

func (g *gatedEtcd) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := g.p.gate(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return g.Engine.Release(ctx, r)
}

func (g *gatedEtcd) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := g.p.gate(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return g.Engine.ReleaseOnce(ctx, r, id)
}

// strangerEtcdLatchFaults: a latch through a leader's SIGKILL and restart
// (its count kept, read through every member, a waiter on a follower woken
// at zero) and two members SIGSTOPped: CountDown, Count and TrySetCount
// through the third are errors, never answers; after the continue the
// count is as before, or one less (a CountDown applied late), and it
// reaches zero with the waiter woken.
func strangerEtcdLatchFaults(t *testing.T, cl *etcdtest.Cluster, c []*distlock.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "latch-faults"
	if ok, err := c[0].CountDownLatch(name).TrySetCount(ctx, 4); err != nil || !ok {
		t.Fatal(ok, err)
	}
	lead, err := cl.Leader(cl.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	f := (lead + 1) % 3
	waited := make(chan error, 1)
	go func() { waited <- c[f].CountDownLatch(name).Wait(ctx) }()
	cl.Members[lead].Restart()
	cl.WaitReady(60 * time.Second)
	if err := c[lead].CountDownLatch(name).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if n, err := c[i].CountDownLatch(name).Count(ctx); err != nil || n != 3 {
			t.Fatalf("count through member %d after the leader's restart: %d, %v; want 3", i, n, err)
		}
	}
	// Two members stopped: the third cannot answer.
	x, y := (f+1)%3, (f+2)%3
	cl.Members[x].Stop()
	cl.Members[y].Stop()
	t.Cleanup(cl.Members[x].Cont)
	t.Cleanup(cl.Members[y].Cont)
	fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
	l := c[f].CountDownLatch(name)
	if err := l.CountDown(fctx); err == nil {
		t.Error("CountDown answered with a majority stopped")
	}
	if n, err := l.Count(fctx); err == nil {
		t.Errorf("Count answered %d with a majority stopped", n)
	}
	if ok, err := c[f].CountDownLatch(name+"-new").TrySetCount(fctx, 2); err == nil {
		t.Errorf("TrySetCount answered %v with a majority stopped", ok)
	}
	fcancel()
	select {
	case err := <-waited:
		t.Fatalf("the Wait returned with a majority stopped: %v", err)
	default:
	}
	cl.Members[x].Cont()
	cl.Members[y].Cont()
	cl.WaitReady(60 * time.Second)
	n, err := l.Count(ctx)
	if err != nil || n != 3 && n != 2 {
		t.Fatalf("count after the continue: %d, %v; want 3 (or 2)", n, err)
	}
	if n2, err := c[f].CountDownLatch(name + "-new").Count(ctx); err == nil && n2 != 0 {
		_ = c[f].CountDownLatch(name + "-new").CountDown(ctx)
		_ = c[f].CountDownLatch(name + "-new").CountDown(ctx)
	}
	select {
	case err := <-waited:
		t.Fatalf("the Wait returned at count %d: %v", n, err)
	default:
	}
	for range n {
		if err := c[x].CountDownLatch(name).CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter not woken within 30 s of zero")
	}
}
