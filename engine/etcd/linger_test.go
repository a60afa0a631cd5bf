package etcd_test

import (
	"context"
	"testing"
	"time"

	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestWatchLingers: a name's watch outlives its last subscription for a
// while (5s), so that a Client's next wait re-uses it: with the cluster's
// only member stopped (SIGSTOP), no new watch could be created, yet a
// subscription right after the last one closed is made. (The watch
// itself delivers nothing meanwhile; the waiters' timers bound the wait.)
func TestWatchLingers(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := etcdengine.New(cl.Client(t))
	defer e.Close()
	name := lockName(t)
	sub, err := e.Subscribe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	m := cl.Members[0]
	t.Cleanup(m.Cont)
	m.Stop()
	closed := time.Now()
	sub.Close()
	sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
	defer scancel()
	again, err := e.SubscribeWaiter(sctx, name, "w1")
	if time.Since(closed) >= 5*time.Second {
		t.Skip("the machine took longer than the linger: nothing to check")
	}
	if err != nil {
		t.Fatalf("a subscription within the linger needed a new watch: %v", err)
	}
	again.Close()
}
