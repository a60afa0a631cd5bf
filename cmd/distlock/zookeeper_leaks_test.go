//go:build unix && !lite

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// TestZooKeeperLeaksLatch: on ZooKeeper, distlock leaks lists a counting
// latch as a latch (type "latch znode", marked so by the engine), with
// and without a PREFIX, with the latch note instead of the advice to
// delete unknown keys, as on Redis and etcd; and leaves it counting.
func TestZooKeeperLeaksLatch(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, 1)
	servers := strings.Join(ens.Servers(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lib, err := distlock.Open(ctx, "zookeeper://"+servers)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	latch := lib.CountDownLatch("batch/a")
	if ok, err := latch.TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	c := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": servers}}
	for _, args := range [][]string{{"leaks"}, {"leaks", "batch/"}} {
		r := c.run(t, args...)
		expect(t, r, exitFailed, "/distlock/c-batch%2Fa", "latch znode",
			"A countdown latch still counting has no expiry by design",
			"Deleting it opens the latch: its waiters return as if it had reached zero")
		if strings.Contains(r.stdout, "DEL") || strings.Contains(r.stdout, "persistent znode") {
			t.Errorf("%v: the latch is not reported as a latch:\n%v", args, r)
		}
	}
	expect(t, c.run(t, "leaks", "--json", "batch/"), exitFailed, `"type": "latch znode"`, `"kind": "latch"`)
	expect(t, c.run(t, "leaks", "other/"), 0, "no leaks")
	if n, err := latch.Count(ctx); err != nil || n != 3 {
		t.Errorf("the latch after leaks: %d, %v; want 3", n, err)
	}
}
