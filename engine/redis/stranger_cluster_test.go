package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
