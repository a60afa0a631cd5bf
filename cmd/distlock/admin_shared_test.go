package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redistest"
)

// TestAdminSharedOnRedis: a `distlock run --shared` holder on Redis is seen
// by list and status, and force-release frees it (not "not held: nothing
// to release"): status then shows it free, and the run learns its lease
// was taken over and stops its command.
func TestAdminSharedOnRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx := testCtx(t)
	c := cli{redis: srv.URL()}

	run := c.command("run", "--ttl", "6s", "--shared", "reports", "--", "sleep", "120")
	var out, errb bytes.Buffer
	run.Stdout, run.Stderr = &out, &errb
	start := time.Now()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		info, err := lib.RWMutex("reports").Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Held {
			break
		}
		if time.Since(start) > patience {
			t.Fatal("the run never took the read lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	expect(t, c.run(t, "list"), 0, "reports", "rwlock", "read")
	expect(t, c.run(t, "status", "reports"), 0, "reader-writer lock (read)", "held by 1")
	expect(t, c.run(t, "force-release", "--yes", "reports"), 0, "released \"reports\"")
	expect(t, c.run(t, "status", "reports"), 0, "state:", "free")
	expect(t, c.run(t, "list"), 0, "no lock is held")
	r := wait(t, run, start, &out, &errb, patience)
	expect(t, r, exitLost, "taken over")
}

// TestForceReleaseOwner: force-release --owner frees only that holder of
// a reader-writer lock, which learns its lease was taken over, while the
// other reader keeps its hold; an owner holding nothing exits 76 and
// changes nothing, an empty one is a usage error.
func TestForceReleaseOwner(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx := testCtx(t)
	c := cli{redis: srv.URL()}
	a, err := lib.RWMutex("w").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lib.RWMutex("w").RLock(ctx, distlock.WithOwner("reader-b"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, c.run(t, "force-release", "--yes", "--owner", a.Owner(), "w"), 0, "released "+a.Owner()+"'s hold")
	<-a.Done()
	if !strings.Contains(a.Err().Error(), "taken over") {
		t.Fatalf("the freed reader: %v, want lost as taken over", a.Err())
	}
	expect(t, c.run(t, "force-release", "--yes", "--owner", a.Owner(), "w"), exitLost, "holds nothing of \"w\"")
	expect(t, c.run(t, "force-release", "--yes", "--owner", "", "w"), exitUsage, "invalid --owner: empty")
	info, err := lib.RWMutex("w").Inspect(ctx)
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != b.Owner() {
		t.Fatalf("after freeing one reader: %+v, %v; want reader-b holding", info, err)
	}
	if err := b.Extend(ctx, b.TTL()); err != nil {
		t.Fatalf("the other reader lost its lease: %v", err)
	}
}
