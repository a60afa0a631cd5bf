package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/redistest"
)

// TestRunForceReleasedBeforeRenewal: a lock force-released while run's
// command runs, the command ending before the next renewal could tell,
// makes run exit 76 and say that the lock was no longer held at its
// release. Before, it exited 0 and said the release failed and that the
// lock stayed locked until its ttl, while the lock was free (found by an
// outside probe).
func TestRunForceReleasedBeforeRenewal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := cli{redis: srv.URL()}
	dir := t.TempDir()
	ready, proceed := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	// A 60 s ttl: the first renewal comes 20 s in, long after the
	// command has ended.
	cmd := c.command("run", "--ttl", "60s", "forced", "--", "sh", "-c",
		`touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`, ready, proceed)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Since(start) > patience {
			_ = cmd.Process.Kill()
			t.Fatalf("the command never started: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	expect(t, c.run(t, "force-release", "--yes", "forced"), 0)
	if err := os.WriteFile(proceed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := wait(t, cmd, start, &out, &errb, patience)
	expect(t, r, exitLost, "no longer held at its release", "taken over")
	if bytes.Contains([]byte(r.stderr), []byte("stays locked")) {
		t.Errorf("run said the freed lock stays locked:\n%v", r)
	}
}
