package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"

	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestStrangerClusterStoppedMasterMovesSubscription: the master that
// serves a subscribed channel is stopped (SIGSTOP: its sockets stay open,
// as with a master cut off by the network) and its slots are handed to
// another master (a failover, done by hand). The sharded subscription must
// move to the new owner, where a publish then reaches the subscriber,
// rather than stay on the silent master (go-redis never reconnects a
// pub/sub connection on a read timeout; no receive ever fails).
func TestStrangerClusterStoppedMasterMovesSubscription(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const name = "stopped"
	key := redisengine.DefaultPrefix + "{" + name + "}"
	stopped := nodeOf(t, cl, key)
	var heir, other *redistest.Server
	lo, hi := 0, 0
	for i, n := range cl.Nodes {
		switch {
		case n == stopped:
			lo, hi = i*16384/len(cl.Nodes), (i+1)*16384/len(cl.Nodes)-1
		case heir == nil:
			heir = n
		default:
			other = n
		}
	}
	heirID := heir.Client().ClusterMyID(ctx).Val()

	waiter := listEngine(t, cl.Client())
	sub, err := waiter.Subscribe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if n := stopped.Client().PubSubShardNumSub(ctx, key).Val()[key]; n != 1 {
		t.Fatalf("subscribers on the master before the stop: %d", n)
	}
	if err := stopped.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stopped.Resume() }()
	for _, n := range []*redistest.Server{heir, other} {
		_, err := n.Client().Pipelined(ctx, func(p goredis.Pipeliner) error {
			for slot := lo; slot <= hi; slot++ {
				p.Do(ctx, "cluster", "setslot", slot, "node", heirID)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("give the stopped master's slots to %s: %v", heir.Addr(), err)
		}
	}
	stoppedAt := time.Now()
	waitFor(t, "the subscription on the heir", func() bool { return heir.Client().PubSubShardNumSub(ctx, key).Val()[key] == 1 })
	t.Logf("the subscription moved %v after the stop", time.Since(stoppedAt))
	// Drain the wake-ups of the move, then a publish on the heir reaches
	// the subscriber.
	for drained := false; !drained; {
		select {
		case <-sub.C():
		default:
			drained = true
		}
	}
	if err := heir.Client().Do(ctx, "spublish", key, "released").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-time.After(5 * time.Second):
		t.Fatal("a publish on the heir did not reach the subscriber")
	}
}

// TestStrangerClusterSlotMoveKinds: every lock kind held on a Cluster, with
// a waiter queued behind each, on names of one hash tag; the slot moves to
// another master with all its keys (IMPORTING, MIGRATING, MIGRATE of every
// key in the slot, SETSLOT NODE), as redis-cli --cluster reshard does. The
// holders keep their leases (a renewal confirmed after the move), the
// latch keeps its count, and once the holders let go every waiter is
// woken by the release (within 800 ms: its subscription moved with the
// slot), with a token above every earlier one.
func TestStrangerClusterSlotMoveKinds(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func() *distlock.Client {
		c := distlock.New(listEngine(t, cl.Client()))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	holder, waiter := client(), client()
	const ttl = 6 * time.Second
	wttl := distlock.WithTTL(ttl)
	m, s, rw, e, l := "t}m", "t}s", "t}rw", "t}e", "t}l"

	mutex, err := holder.Acquire(ctx, m, wttl)
	if err != nil {
		t.Fatal(err)
	}
	permit, err := holder.Semaphore(s, 1).Acquire(ctx, wttl)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := holder.RWMutex(rw).RLock(ctx, wttl)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := holder.Campaign(ctx, e, "first", wttl)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := holder.CountDownLatch(l).TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	type got struct {
		what  string
		token uint64
		err   error
	}
	served := make(chan got, 5)
	wait := func(what string, f func(context.Context) (uint64, error)) {
		go func() {
			tok, err := f(ctx)
			served <- got{what, tok, err}
		}()
	}
	lease := func(l *distlock.Lease, err error) (uint64, error) {
		if err != nil {
			return 0, err
		}
		return l.Token(), nil
	}
	wait("mutex", func(c context.Context) (uint64, error) { return lease(waiter.Acquire(c, m, wttl)) })
	wait("semaphore", func(c context.Context) (uint64, error) { return lease(waiter.Semaphore(s, 1).Acquire(c, wttl)) })
	wait("writer", func(c context.Context) (uint64, error) { return lease(waiter.RWMutex(rw).Lock(c, wttl)) })
	wait("election", func(c context.Context) (uint64, error) {
		ld, err := waiter.Campaign(c, e, "second", wttl)
		if err != nil {
			return 0, err
		}
		return ld.Term(), nil
	})
	wait("latch", func(c context.Context) (uint64, error) { return 0, waiter.CountDownLatch(l).Wait(c) })
	for _, in := range []func() (distlock.Info, error){
		func() (distlock.Info, error) { return holder.Inspect(ctx, m) },
		func() (distlock.Info, error) { return holder.Semaphore(s, 1).Inspect(ctx) },
		func() (distlock.Info, error) { return holder.RWMutex(rw).Inspect(ctx) },
		func() (distlock.Info, error) { return holder.Inspect(ctx, e) },
	} {
		waitFor(t, "a waiter queued", func() bool { i, err := in(); return err == nil && i.Waiters == 1 })
	}
	key := redisengine.DefaultPrefix + "{t}"
	from := nodeOf(t, cl, key)
	waitFor(t, "the latch waiter subscribed", func() bool {
		return from.Client().PubSubShardNumSub(ctx, redisengine.DefaultPrefix+"{"+l+"}").Val()[redisengine.DefaultPrefix+"{"+l+"}"] == 1
	})
	to := cl.Nodes[0]
	if to == from {
		to = cl.Nodes[1]
	}
	var highest uint64
	for _, tok := range []uint64{mutex.Token(), permit.Token(), reader.Token(), leader.Term()} {
		highest = max(highest, tok)
	}

	slot := int(cl.Client().ClusterKeySlot(ctx, key).Val())
	keys := from.Client().ClusterGetKeysInSlot(ctx, slot, 1000).Val()
	t.Logf("moving slot %d with %d keys: %v", slot, len(keys), keys)
	moveSlot(t, cl, slot, from, to, keys...)
	moved := time.Now()

	for what, ls := range map[string]*distlock.Lease{"mutex": mutex, "permit": permit, "reader": reader, "leader": leader.Lease()} {
		waitFor(t, what+" renewed after the move", func() bool {
			if ls.Err() != nil {
				t.Fatalf("%s lost after the slot move: %v", what, ls.Err())
			}
			return ls.Deadline().After(moved.Add(ttl * 9 / 10))
		})
	}
	if err := holder.CountDownLatch(l).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := waiter.CountDownLatch(l).Count(ctx); err != nil || n != 1 {
		t.Fatalf("latch count after the move and one CountDown: %d, %v; want 1", n, err)
	}
	select {
	case r := <-served:
		t.Fatalf("%s served while everything was held: %v", r.what, r.err)
	default:
	}
	for _, ls := range []*distlock.Lease{mutex, permit, reader, leader.Lease()} {
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := holder.CountDownLatch(l).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	// A release wakes its waiters by pub/sub, in milliseconds; a queued
	// waiter's heartbeat (every second) is the slow path a lost
	// subscription would leave, and a latch's Wait has none.
	const bound = 800 * time.Millisecond
	timeout := time.After(bound)
	for range 5 {
		select {
		case r := <-served:
			if r.err != nil {
				t.Fatalf("%s after the move: %v", r.what, r.err)
			}
			t.Logf("%s served %v after the release, token %d (highest before %d)", r.what, time.Since(released), r.token, highest)
			if r.what != "latch" && r.token <= highest {
				t.Fatalf("%s: token %d not above %d", r.what, r.token, highest)
			}
		case <-timeout:
			t.Fatalf("queued waiters not served within %v of the release", bound)
		}
	}
}
