//go:build unix && !lite

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/redistest"
)

// TestForeignKeyExit: a key distlock did not write at a lock's place (what
// redis-cli SET 'distlock:{foreign}' garbage leaves; docs/CLI.md's leaks
// example) is neither a backend that is unreachable nor one a wait can
// outlast: status, run (with --wait 0 and with a long --wait), acquire,
// extend and release exit 65 at once, naming the key and the repair (leaks,
// force-release), and change nothing: the key stays as it was and run's
// command never starts. force-release deletes the key, after which run
// takes the lock. The same through a distlock server on that Redis (its
// foreign_key answer; before, a 503 and exit 69, "check that it is up").
func TestForeignKeyExit(t *testing.T) {
	srv := redistest.Start(t)
	s := serveIn(t, nil, "--redis", srv.URL())
	for _, tc := range []struct {
		via string
		c   cli
	}{
		{"redis", cli{redis: srv.URL()}},
		{"server", cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}},
	} {
		t.Run(tc.via, func(t *testing.T) { foreignKeyExit(t, srv, tc.c) })
	}
}

// foreignKeyExit is TestForeignKeyExit through c, on srv.
func foreignKeyExit(t *testing.T, srv *redistest.Server, c cli) {
	ctx := testCtx(t)
	rdb := srv.Client()
	const key = "distlock:{foreign}"
	if err := rdb.Set(ctx, key, "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		{"status", "foreign"},
		{"run", "--wait", "0", "foreign", "--", "touch", ran},
		// A wait of 10 minutes ends at once, not after the failure budget.
		{"run", "--wait", "10m", "foreign", "--", "touch", ran},
		{"acquire", "--wait", "10m", "foreign"},
		{"extend", "foreign", "someone"},
		{"release", "foreign", "someone"},
	} {
		r := c.run(t, args...)
		expect(t, r, exitForeign, key, "distlock leaks", "distlock force-release foreign")
		for _, wrong := range []string{"reachable", "gave up"} {
			if strings.Contains(r.stderr, wrong) {
				t.Errorf("%q: output says %q:\n%v", args, wrong, r)
			}
		}
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("run started its command on a foreign key (%v)", err)
	}
	if v, err := rdb.Get(ctx, key).Result(); v != "garbage" || err != nil {
		t.Errorf("%s = %q, %v after the refused commands; want garbage, unchanged", key, v, err)
	}
	expect(t, c.run(t, "force-release", "--yes", "foreign"), exitOK)
	expect(t, c.run(t, "run", "--wait", "0", "foreign", "--", "touch", ran), exitOK)
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("run after force-release: %v", err)
	}
}
