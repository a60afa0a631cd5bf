package zookeeper_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
)

// TestLeaksReportsCountingLatch: a countdown latch still counting is
// reported by Leaks as a latch (type LatchLeakType, kind other), with no
// prefix and under the prefix of its name, as Redis and etcd report
// theirs; not under another prefix; and no more once its count reached
// zero. A persistent node at a latch's place that is no latch's record is
// reported as a plain persistent znode, an ephemeral one not at all.
// Leaks leaves the latch counting.
func TestLeaksReportsCountingLatch(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := "/" + uniqueName("latch-leaks")
	eng := dial(t, ens.Servers(), zkengine.WithRoot(root))
	c := distlock.New(eng)
	defer c.Close()
	latch := c.CountDownLatch("jobs/batch")
	if ok, err := latch.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	latchKey := root + "/c-" + url.PathEscape("jobs/batch")

	raw, _, err := zk.Connect(ens.Servers(), testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	junkKey := root + "/c-junk"
	if _, err := raw.Create(junkKey, []byte("not a latch"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// An ephemeral node goes with its session: not a leak.
	if _, err := raw.Create(root+"/c-ephemeral", []byte(`{"n":1}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	latchLeak := engine.Leak{Key: latchKey, Kind: engine.LeakOther, Type: zkengine.LatchLeakType, TTL: -1}
	junkLeak := engine.Leak{Key: junkKey, Kind: engine.LeakOther, Type: "persistent znode", TTL: -1}
	for _, tc := range []struct {
		prefix string
		want   []engine.Leak
	}{
		{"", []engine.Leak{latchLeak, junkLeak}},
		{"jobs/", []engine.Leak{latchLeak}},
		{"ju", []engine.Leak{junkLeak}},
		{"other", nil},
	} {
		leaks, next, err := eng.Leaks(ctx, tc.prefix, time.Hour, "", 100)
		if err != nil || next != "" || !sameLeaks(leaks, tc.want) {
			t.Errorf("Leaks(%q): %+v, %q, %v; want %+v", tc.prefix, leaks, next, err, tc.want)
		}
	}
	if n, err := latch.Count(ctx); err != nil || n != 2 {
		t.Fatalf("the latch after Leaks: %d, %v; want 2", n, err)
	}
	for range 2 {
		if err := latch.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if leaks, _, err := eng.Leaks(ctx, "jobs/", time.Hour, "", 100); err != nil || len(leaks) != 0 {
		t.Errorf("Leaks once the latch reached zero: %+v, %v; want none", leaks, err)
	}
}

// TestDeletedLatchOpens: deleting a counting latch's node (what an
// operator who takes `distlock leaks` for a leak would do) opens the
// latch: a pending Wait returns nil, as at zero, and the count reads 0.
func TestDeletedLatchOpens(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := "/" + uniqueName("latch-deleted")
	c := distlock.New(dial(t, ens.Servers(), zkengine.WithRoot(root)))
	defer c.Close()
	latch := c.CountDownLatch("deleted")
	if ok, err := latch.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- latch.Wait(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v with the count at 2", err)
	default:
	}
	raw, _, err := zk.Connect(ens.Servers(), testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.Delete(root+"/c-deleted", -1); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait with the latch's node deleted: %v; want nil (open)", err)
	}
	if n, err := latch.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count after the delete: %d, %v; want 0", n, err)
	}
}

// sameLeaks reports whether got holds the leaks of want, in that order.
func sameLeaks(got, want []engine.Leak) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
