//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/redistest"
)

// TestElectOneLeaderAtATime runs three distlock elect processes on one
// election: their commands never overlap, each runs with a higher term
// than the one before, and each resigns when its command ends, so the next
// is elected at once. distlock leader shows the leader meanwhile, and "no
// leader" (exit 1) at the end.
func TestElectOneLeaderAtATime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	log, up := filepath.Join(dir, "log"), filepath.Join(dir, "up")
	script := `echo "start $DISTLOCK_TERM $(date +%s%N)" >> "$LOG"; echo up > "$UP"; sleep 0.3; echo "end $DISTLOCK_TERM $(date +%s%N)" >> "$LOG"`
	c := cli{redis: srv.URL(), env: map[string]string{"LOG": log, "UP": up}}
	const n = 3
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Go(func() {
			results[i] = c.run(t, "elect", "--ttl", "2s", "--value", "node-"+strconv.Itoa(i), "jobs", "--", "sh", "-c", script)
		})
	}
	waitFile(t, up, patience)
	r := c.run(t, "leader", "--json", "jobs")
	expect(t, r, 0)
	var l leaderJSON
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || !l.Elected || !strings.HasPrefix(l.Value, "node-") || l.Term == 0 {
		t.Fatalf("distlock leader --json while one leads: %q (%v)", r.stdout, err)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("distlock leader --json: %q, want one object on one line (as the docs say)", r.stdout)
	}
	wg.Wait()
	for _, r := range results {
		expect(t, r, 0)
	}
	expect(t, c.run(t, "leader", "jobs"), exitFailed, "no leader")

	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2*n {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2*n, data)
	}
	var prevTerm uint64
	var prevEnd int64
	for i := 0; i < len(lines); i += 2 {
		s, e := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(s) != 3 || len(e) != 3 || s[0] != "start" || e[0] != "end" || s[1] != e[1] {
			t.Fatalf("leaders overlapped:\n%s", data)
		}
		term, _ := strconv.ParseUint(s[1], 10, 64)
		at, _ := strconv.ParseInt(s[2], 10, 64)
		end, _ := strconv.ParseInt(e[2], 10, 64)
		if term <= prevTerm || at < prevEnd {
			t.Fatalf("term %d after %d, started at %d before the previous end %d:\n%s", term, prevTerm, at, prevEnd, data)
		}
		prevTerm, prevEnd = term, end
	}
}

// TestElectLossStopsCommand freezes Redis while the leader's command runs:
// the leadership is lost, the command is stopped, and with --once distlock
// exits 76 without running it again.
func TestElectLossStopsCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	up, runs := filepath.Join(dir, "up"), filepath.Join(dir, "runs")
	c := cli{redis: srv.URL(), env: map[string]string{"UP": up, "RUNS": runs}}
	cmd := c.command("elect", "--once", "--ttl", "1s", "--grace", "200ms", "e", "--", "sh", "-c", `echo run >> "$RUNS"; echo up > "$UP"; sleep 100`)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, up, patience)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Resume() }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(patience):
		_ = cmd.Process.Kill()
		t.Fatalf("distlock elect did not stop after the loss; stderr:\n%s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitLost {
		t.Fatalf("exit %d after %v, want %d; stderr:\n%s", code, time.Since(start), exitLost, errb.String())
	}
	if !strings.Contains(errb.String(), "--once") {
		t.Errorf("stderr does not say why it stops:\n%s", errb.String())
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 1 {
		t.Errorf("the command ran %d times, want once", strings.Count(string(b), "run"))
	}
}
