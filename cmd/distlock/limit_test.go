package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestLimit: distlock limit changes a semaphore's stored limit on a
// server: a client that still declares the old limit is served under the
// new one at once (its queued waiter is granted, not refused), --json
// prints the semaphore as status does, and bad input is a usage error that
// changes nothing.
func TestLimit(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	lib := serverLibrary(t, s.url)
	ctx := testCtx(t)
	old := lib.Semaphore("pool", 2) // a client not redeployed
	held, err := old.Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	got := make(chan error, 1)
	go func() {
		l, err := old.Acquire(ctx, distlock.WithTTL(time.Minute))
		if err == nil {
			defer l.Release(ctx)
		}
		got <- err
	}()
	for info, _ := old.Inspect(ctx); info.Waiters != 1; info, _ = old.Inspect(ctx) {
		time.Sleep(time.Millisecond)
	}
	expect(t, c.run(t, "limit", "pool", "3"), 0, `"pool" has limit 3`, "permits held")
	if err := <-got; err != nil {
		t.Fatalf("the waiter declaring the old limit after distlock limit: %v, want a grant", err)
	}
	r := c.run(t, "limit", "--json", "pool", "4")
	expect(t, r, 0)
	var j struct {
		Kind  string `json:"kind"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || j.Kind != "semaphore" || j.Limit != 4 {
		t.Fatalf("--json: %v: %s", err, r.stdout)
	}
	expect(t, c.run(t, "limit", "new", "1"), 0, `"new" has limit 1`)

	rw, err := lib.RWMutex("rw").RLock(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Release(ctx)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"limit", "pool", "0"}, "from 1 to"},
		{[]string{"limit", "pool", "many"}, "whole number"},
		{[]string{"limit", "pool", "1073741824"}, "from 1 to"},
		{[]string{"limit", "pool"}, "missing LIMIT"},
		{[]string{"limit", "rw", "2"}, "rwlock"},
	} {
		expect(t, c.run(t, tc.args...), exitUsage, tc.want)
	}
	if info, _ := old.Inspect(ctx); info.Limit != 4 {
		t.Fatalf("bad input changed the limit: %+v", info)
	}
}
