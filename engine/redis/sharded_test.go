package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// nodeOf returns the node of cl that serves key.
func nodeOf(t *testing.T, cl *redistest.Cluster, key string) *redistest.Server {
	t.Helper()
	c, err := cl.Client().MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes {
		if n.Addr() == c.Options().Addr {
			return n
		}
	}
	t.Fatalf("no node serves %s", key)
	return nil
}

// commandCalls returns how many times srv ran cmd (INFO commandstats).
func commandCalls(t *testing.T, srv *redistest.Server, cmd string) int {
	t.Helper()
	info := srv.Client().Info(context.Background(), "commandstats").Val()
	for _, l := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(l, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestClusterShardedWakeups: on Redis Cluster a waiter subscribes with
// SSUBSCRIBE on the master of its lock's slot (one connection per master
// for the names of several masters), Inspect counts it there, and a
// release wakes it with SPUBLISH on that master only. WithClassicPubSub
// goes back to PUBLISH and SUBSCRIBE.
func TestClusterShardedWakeups(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := listCtx(t)
	for _, classic := range []bool{false, true} {
		var opts []redisengine.Option
		if classic {
			opts = append(opts, redisengine.WithClassicPubSub())
		}
		holder := listEngine(t, cl.Client(), opts...)
		waiter := listEngine(t, cl.Client(), opts...)
		masters := map[*redistest.Server]bool{}
		for i := 0; len(masters) < len(cl.Nodes); i++ {
			if i > 100 {
				t.Fatal("100 names did not cover every master")
			}
			name := "shard-" + strconv.FormatBool(classic) + "-" + strconv.Itoa(i)
			key := redisengine.DefaultPrefix + "{" + name + "}"
			node := nodeOf(t, cl, key)
			if masters[node] {
				continue
			}
			masters[node] = true
			listGrant(t, holder, name, "h", time.Minute)
			sub, err := waiter.Subscribe(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if info, err := holder.Inspect(ctx, name); err != nil || info.Subscribers != 1 || info.Waiters != 0 {
				t.Fatalf("classic %v: inspect counts %d subscribers and %d waiters, %v; want 1 and 0", classic, info.Subscribers, info.Waiters, err)
			}
			shard := node.Client().PubSubShardNumSub(ctx, key).Val()[key]
			if want := map[bool]int64{false: 1, true: 0}[classic]; shard != want {
				t.Fatalf("classic %v: %d sharded subscribers on the slot's master, want %d", classic, shard, want)
			}
			spublish, publish := commandCalls(t, node, "spublish"), commandCalls(t, node, "publish")
			// A waiting acquire marks the lock, so its release publishes.
			if g, err := waiter.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "w", Attempt: "w", TTL: time.Minute, Waiting: true}); err != nil || g.Acquired {
				t.Fatalf("waiting acquire: %+v, %v", g, err)
			}
			if r, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "h"}); err != nil || r.Status != engine.Released {
				t.Fatalf("release: %+v, %v", r, err)
			}
			select {
			case <-sub.C():
			case <-time.After(10 * time.Second):
				t.Fatalf("classic %v: the release did not wake the waiter", classic)
			}
			sub.Close()
			gotS, gotP := commandCalls(t, node, "spublish")-spublish, commandCalls(t, node, "publish")-publish
			if classic && (gotP != 1 || gotS != 0) || !classic && (gotS != 1 || gotP != 0) {
				t.Fatalf("classic %v: release ran SPUBLISH %d and PUBLISH %d times on the slot's master", classic, gotS, gotP)
			}
		}
	}
}

// TestClusterSlotMoveResubscribes: when the slot of a waited-for lock moves
// to another master (its keys migrated), the server drops the sharded
// subscription; the waiter subscribes again on the new master, so the
// holder's release wakes it at once rather than at the holder's expiry.
func TestClusterSlotMoveResubscribes(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := listCtx(t)
	const name = "moving"
	key := redisengine.DefaultPrefix + "{" + name + "}"
	slot := int(cl.Client().ClusterKeySlot(ctx, key).Val())
	from := nodeOf(t, cl, key)
	to := cl.Nodes[0]
	if to == from {
		to = cl.Nodes[1]
	}

	l, got := heldWithWaiter(t, cl, name)
	waitFor(t, "the waiter's subscription on the old master", func() bool { return wakeSubscribed(ctx, from, key) })

	// Every key of the lock: the lock, its fencing high-water, and its
	// waiter queue (there once the waiter's queued attempt landed; MIGRATE
	// skips the keys that do not exist).
	moveSlot(t, cl, slot, from, to, key, key+":fence", key+":q", key+":qd", key+":qs")
	// The channel moves once go-redis's view of the cluster names the new
	// master (refreshed after a MOVED); the watcher keeps trying until it
	// does (a busy machine's refresh can take seconds).
	waitFor(t, "the waiter's subscription on the new master", func() bool { return wakeSubscribed(ctx, to, key) })

	releaseWakes(t, l, got)
}

// wakeSubscribed reports whether srv serves a sharded subscription to a
// waiter's wake channel for the lock key (its engine's own: key:w:<id>).
func wakeSubscribed(ctx context.Context, srv *redistest.Server, key string) bool {
	return len(srv.Client().PubSubShardChannels(ctx, key+":w:*").Val()) == 1
}

// moveSlot moves slot, with keys, from one master to another, the way
// redis-cli --cluster reshard does: IMPORTING, MIGRATING, MIGRATE, then
// SETSLOT NODE on every master.
func moveSlot(t *testing.T, cl *redistest.Cluster, slot int, from, to *redistest.Server, keys ...string) {
	t.Helper()
	ctx := listCtx(t)
	id := func(s *redistest.Server) string { return s.Client().ClusterMyID(ctx).Val() }
	fromID, toID := id(from), id(to)
	do := func(s *redistest.Server, args ...any) {
		t.Helper()
		if err := s.Client().Do(ctx, args...).Err(); err != nil && err != goredis.Nil {
			t.Fatalf("%v on %s: %v", args, s.Addr(), err)
		}
	}
	do(to, "cluster", "setslot", slot, "importing", fromID)
	do(from, "cluster", "setslot", slot, "migrating", toID)
	args := []any{"migrate", "127.0.0.1", to.Port(), "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	do(from, args...)
	// redis-cli's order: the target first (it takes the slot and bumps its
	// config epoch), then the source, then the others; set in another
	// order, the source and the target can each send a client to the
	// other for a moment.
	do(to, "cluster", "setslot", slot, "node", toID)
	do(from, "cluster", "setslot", slot, "node", toID)
	for _, s := range cl.Nodes {
		if s != from && s != to {
			do(s, "cluster", "setslot", slot, "node", toID)
		}
	}
	// The move is over once every node says so (gossip sent before a
	// node's SETSLOT can still be applied after it, and on a loaded
	// machine it was once still holding a node to the old owner 20 s
	// later: a node that disagrees is told again).
	waitFor(t, fmt.Sprintf("every node to give slot %d to %s", slot, to.Addr()), func() bool {
		agree := true
		for _, s := range cl.Nodes {
			if slotOwner(ctx, s, slot) != to.Addr() {
				agree = false
				_ = s.Client().Do(ctx, "cluster", "setslot", slot, "node", toID).Err()
			}
		}
		return agree
	})
}

// slotOwner is the address of the master that serves slot according to s
// ("" when s cannot tell).
func slotOwner(ctx context.Context, s *redistest.Server, slot int) string {
	slots, err := s.Client().ClusterSlots(ctx).Result()
	if err != nil {
		return ""
	}
	for _, r := range slots {
		if int(r.Start) <= slot && slot <= int(r.End) && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr
		}
	}
	return ""
}

// TestClusterMasterRestartKeepsWaiter: the master that serves a waited-for
// lock is killed and restarted (with persistence, so the lock survives);
// the waiter's subscription comes back on it, and the holder's release
// wakes the waiter at once rather than at the holder's expiry.
func TestClusterMasterRestartKeepsWaiter(t *testing.T) {
	cl := redistest.StartCluster(t, 3, redistest.WithPersistence())
	ctx := listCtx(t)
	const name = "restarting"
	key := redisengine.DefaultPrefix + "{" + name + "}"
	node := nodeOf(t, cl, key)

	l, got := heldWithWaiter(t, cl, name)
	waitFor(t, "the waiter's subscription", func() bool { return wakeSubscribed(ctx, node, key) })

	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the waiter's connection fails meanwhile
	if err := node.Restart(); err != nil {
		t.Fatal(err)
	}
	cl.WaitUp(t)
	waitFor(t, "the waiter's subscription after the restart", func() bool { return wakeSubscribed(ctx, node, key) })

	releaseWakes(t, l, got)
}

// heldWithWaiter has a holder acquire name on cl (ttl 30s, no renewal) and
// a waiter (another Client, as another process) wait for it; the channel
// gets the time the waiter was granted the lock, or is closed on its error.
func heldWithWaiter(t *testing.T, cl *redistest.Cluster, name string) (*distlock.Lease, <-chan time.Time) {
	t.Helper()
	ctx := listCtx(t)
	holder := distlock.New(listEngine(t, cl.Client()))
	t.Cleanup(func() { _ = holder.Close() })
	waiter := distlock.New(listEngine(t, cl.Client()))
	t.Cleanup(func() { _ = waiter.Close() })
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(30*time.Second), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		wl, err := waiter.Acquire(ctx, name)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
		_ = wl.Release(ctx)
	}()
	return l, got
}

// releaseWakes releases l and checks that the waiter got the lock when
// woken by the release, not at l's expiry (its deadline, 30s on).
func releaseWakes(t *testing.T, l *distlock.Lease, got <-chan time.Time) {
	t.Helper()
	released := time.Now()
	if err := l.Release(listCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case at, ok := <-got:
		if ok && !at.Before(l.Deadline()) {
			t.Fatalf("the waiter got the lock %v after the release, at the holder's expiry", at.Sub(released))
		}
	case <-time.After(time.Until(l.Deadline())):
		t.Fatal("the release did not wake the waiter")
	}
}

// TestClusterMasterLossMovesSubscription: the master that serves a
// waited-for channel dies for good and its slots go to another master (a
// failover, done by hand); the engine gives up the dead connection after a
// few failed receives and subscribes the channel on the new owner, where a
// release then wakes the waiter.
func TestClusterMasterLossMovesSubscription(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := listCtx(t)
	const name = "orphaned"
	key := redisengine.DefaultPrefix + "{" + name + "}"
	dead := nodeOf(t, cl, key)
	var heir, other *redistest.Server
	lo, hi := 0, 0
	for i, n := range cl.Nodes {
		switch {
		case n == dead:
			lo, hi = i*16384/len(cl.Nodes), (i+1)*16384/len(cl.Nodes)-1
		case heir == nil:
			heir = n
		default:
			other = n
		}
	}
	heirID := heir.Client().ClusterMyID(ctx).Val()

	waiterClient := cl.Client()
	waiter := listEngine(t, waiterClient)
	sub, err := waiter.Subscribe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := dead.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*redistest.Server{heir, other} {
		_, err := n.Client().Pipelined(ctx, func(p goredis.Pipeliner) error {
			for slot := lo; slot <= hi; slot++ {
				p.Do(ctx, "cluster", "setslot", slot, "node", heirID)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("give the dead master's slots to %s: %v", heir.Addr(), err)
		}
	}
	waitFor(t, "the subscription on the heir", func() bool { return heir.Client().PubSubShardNumSub(ctx, key).Val()[key] == 1 })

	holder := listEngine(t, cl.Client())
	listGrant(t, holder, name, "h", time.Minute)
	// The waiter's client reloads the slot map (go-redis does so on its
	// own only every 10 s, or on a MOVED): what is under test is the
	// subscription, not how soon go-redis routes around a dead master.
	markedReleaseWakes(t, holder, waiter, name, sub, func() { waiterClient.ReloadState(ctx) })
}

// TestClusterChurnKeepsSubscription: waiters come and go on one name as fast
// as they can, so the answer to a SUNSUBSCRIBE often arrives after the
// channel was subscribed again on the same connection. That answer is ours
// and must not be taken for the server dropping the channel (a moved slot):
// the last waiter's subscription stays in place, and a release wakes it.
func TestClusterChurnKeepsSubscription(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := listCtx(t)
	const name = "churn"
	key := redisengine.DefaultPrefix + "{" + name + "}"
	node := nodeOf(t, cl, key)
	waiter := listEngine(t, cl.Client())
	for range 300 {
		sub, err := waiter.Subscribe(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		sub.Close()
	}
	sub, err := waiter.Subscribe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if n := node.Client().PubSubShardNumSub(ctx, key).Val()[key]; n != 1 {
			t.Fatalf("the last waiter's subscription: %d subscribers on the slot's master, want 1", n)
		}
	}
	holder := listEngine(t, cl.Client())
	listGrant(t, holder, name, "h", time.Minute)
	markedReleaseWakes(t, holder, waiter, name, sub, func() {})
}

// markedReleaseWakes has waiter's refused waiting acquire mark name, which
// holder holds as owner "h", then releases it and checks that sub, the
// waiter's subscription, is woken by that release (wake-ups from before it
// are drained first; 10s is a limit for a starved machine, not a speed).
// converge runs after each failed acquire (a reload of the waiter's slot
// map, after a failover).
func markedReleaseWakes(t *testing.T, holder, waiter *redisengine.Engine, name string, sub engine.Subscription, converge func()) {
	t.Helper()
	ctx := listCtx(t)
	// After a failover the waiter's cluster client may still route the
	// name's slot to the dead master until it reloads the slot map: an
	// error then ("connection refused") is the client converging, as a
	// Client's wait loop would retry it, not the property under test. One
	// that lasts fails the wait.
	var g engine.Grant
	var err error
	waitFor(t, "a waiting acquire that reaches the name's master", func() bool {
		g, err = waiter.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "w", Attempt: "w", TTL: time.Minute, Waiting: true})
		if err != nil {
			t.Logf("waiting acquire: %v (tried again)", err)
			converge()
		}
		return err == nil
	})
	if g.Acquired {
		t.Fatalf("waiting acquire: %+v, %v", g, err)
	}
	for len(sub.C()) > 0 {
		<-sub.C()
	}
	if r, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "h"}); err != nil || r.Status != engine.Released {
		t.Fatalf("release: %+v, %v", r, err)
	}
	select {
	case <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the release did not wake the waiter")
	}
}
