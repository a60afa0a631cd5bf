//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/remote"
)

// serverLibrary returns a distlock client on a distlock server, as another
// process would use.
func serverLibrary(t *testing.T, url string) *distlock.Client {
	t.Helper()
	eng, err := remote.New(url)
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng)
	t.Cleanup(func() {
		_ = c.Close()
		_ = eng.Close()
	})
	return c
}

// events reads a log of "KIND WEIGHT" lines ("start 2", "end 2") that
// commands append in real-time order, and returns the largest sum of
// weights running at once.
func peakWeight(t *testing.T, path string) (peak int, lines []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var kind string
		var w int
		if _, err := fmtSscan(line, "%s %d", &kind, &w); err != nil {
			t.Fatalf("bad line %q in\n%s", line, data)
		}
		if kind == "start" {
			running += w
		} else {
			running -= w
		}
		peak = max(peak, running)
		lines = append(lines, line)
	}
	return peak, lines
}

// TestRunSemaphore: distlock run --limit 2 (with --weight) on a distlock
// server: never more than 2 permits' worth of commands at once, and every
// command runs.
func TestRunSemaphore(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	log := filepath.Join(t.TempDir(), "log")
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url, "LOG": log}}
	const n = 5
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Go(func() {
			w := 1 + i%2
			script := `echo "start $W" >> "$LOG"; sleep 0.1; echo "end $W" >> "$LOG"`
			cc := c
			cc.env = map[string]string{"DISTLOCK_SERVER": s.url, "LOG": log, "W": string(rune('0' + w))}
			results[i] = cc.run(t, "run", "--wait", "25s", "--ttl", "5s", "--limit", "2", "--weight", string(rune('0'+w)), "sem", "--", "sh", "-c", script)
		})
	}
	wg.Wait()
	for _, r := range results {
		expect(t, r, 0)
	}
	peak, lines := peakWeight(t, log)
	if len(lines) != 2*n {
		t.Fatalf("%d lines, want %d: %v", len(lines), 2*n, lines)
	}
	if peak > 2 {
		t.Fatalf("%d permits held at once, limit 2: %v", peak, lines)
	}

	// Another limit is served under the stored one (here: full, so busy),
	// not refused; a weight above the stored limit is.
	lib := serverLibrary(t, s.url)
	ctx := testCtx(t)
	l, err := lib.Semaphore("held", 2).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	expect(t, c.run(t, "run", "--wait", "0", "--limit", "3", "held", "--", "true"), exitBusy)
	expect(t, c.run(t, "run", "--wait", "0", "--limit", "3", "--weight", "3", "held", "--", "true"), exitUsage, "weight", "limit 2")
	expect(t, c.run(t, "run", "--wait", "0", "--limit", "2", "held", "--", "true"), exitBusy)
	expect(t, c.run(t, "run", "--wait", "0", "--shared", "held", "--", "true"), exitUsage, "semaphore")
	expect(t, c.run(t, "run", "-v", "--wait", "0", "--limit", "1", "other", "--", "true"), 0, `a permit (limit 1) of "other"`)
}

// TestRunRWLock: --shared commands hold the lock together (each waits until
// it sees all three running); an --exclusive command never runs beside
// anyone.
func TestRunRWLock(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	dir := t.TempDir()
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url, "LOG": filepath.Join(dir, "log"), "SEEN": filepath.Join(dir, "seen")}}
	// A reader records that it saw all three readers running at once.
	reader := `echo "start 1" >> "$LOG"; i=0; while [ "$(grep -c start "$LOG")" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; ` +
		`[ "$(grep -c start "$LOG")" -ge 3 ] && echo seen >> "$SEEN"; echo "end 1" >> "$LOG"`
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range 3 {
		wg.Go(func() { results[i] = c.run(t, "run", "--wait", "25s", "--shared", "cache", "--", "sh", "-c", reader) })
	}
	wg.Wait()
	for _, r := range results {
		expect(t, r, 0)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "seen")); strings.Count(string(data), "seen") != 3 {
		t.Fatalf("the readers did not all run together: %q", data)
	}

	// Readers and writers: a writer (weight 100 in the log) runs alone.
	log2 := filepath.Join(dir, "log2")
	c.env["LOG"] = log2
	results = make([]result, 6)
	for i := range 6 {
		wg.Go(func() {
			args := []string{"run", "--wait", "25s", "--shared", "cache2", "--", "sh", "-c", `echo "start 1" >> "$LOG"; sleep 0.05; echo "end 1" >> "$LOG"`}
			if i%3 == 0 {
				args = []string{"run", "--wait", "25s", "--exclusive", "cache2", "--", "sh", "-c", `echo "start 100" >> "$LOG"; sleep 0.05; echo "end 100" >> "$LOG"`}
			}
			results[i] = c.run(t, args...)
		})
	}
	wg.Wait()
	for _, r := range results {
		expect(t, r, 0)
	}
	peak, lines := peakWeight(t, log2)
	if peak > 100 {
		t.Fatalf("a writer ran beside another holder: %v", lines)
	}
}

// TestRunKindUsage: bad lock-kind flags are usage errors, found before
// any backend is reached.
func TestRunKindUsage(t *testing.T) {
	t.Parallel()
	c := cli{redis: "redis://127.0.0.1:1"} // never reached
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--shared", "--exclusive", "x", "--", "true"}, "exclude each other"},
		{[]string{"run", "--limit", "2", "--shared", "x", "--", "true"}, "use one kind"},
		{[]string{"run", "--weight", "2", "x", "--", "true"}, "give its --limit too"},
		{[]string{"run", "--limit", "2", "--weight", "0", "x", "--", "true"}, "at least 1 permit"},
		{[]string{"run", "--limit", "2", "--weight", "-1", "x", "--", "true"}, "at least 1 permit"},
		{[]string{"run", "-n", "0", "x", "--", "true"}, "between 1 and"},
	} {
		r := c.run(t, tc.args...)
		expect(t, r, exitUsage, tc.want)
		if strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%q connected before checking usage", tc.args)
		}
	}
}

// TestStatusListLeaksShared: status, list and leaks show a shared lock's
// every holder with its weight or mode.
func TestStatusListLeaksShared(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	lib := serverLibrary(t, s.url)
	ctx := testCtx(t)
	big, err := lib.Semaphore("pool", 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(time.Minute), distlock.WithMetadata("big job"))
	if err != nil {
		t.Fatal(err)
	}
	small, err := lib.Semaphore("pool", 3).Acquire(ctx, distlock.WithTTL(20*time.Second), distlock.WithMetadata("small job"))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := lib.RWMutex("rw").RLock(ctx, distlock.WithTTL(time.Minute), distlock.WithMetadata("reader one"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := lib.RWMutex("rw").RLock(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	m, err := lib.Acquire(ctx, "mutex", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}

	expect(t, c.run(t, "status", "pool"), 0, "semaphore, limit 3 (3 permits held)", "held by 2", "WEIGHT", big.Owner(), "×2", small.Owner(), "×1", "big job")
	expect(t, c.run(t, "status", "rw"), 0, "reader-writer lock (read)", "MODE", r1.Owner(), r2.Owner(), "read", "reader one")
	r := c.run(t, "status", "--json", "pool")
	var st infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Kind != "semaphore" || st.Limit != 3 || !st.Held || len(st.Holders) != 2 ||
		st.Holders[0].Owner != big.Owner() || st.Holders[0].Weight != 2 || st.Holders[0].Metadata != "big job" || st.Owner != "" {
		t.Fatalf("status --json: %+v, %v\n%v", st, err, r)
	}
	r = c.run(t, "status", "--json", "rw")
	st = infoJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Kind != "rwlock" || st.Mode != "read" || len(st.Holders) != 2 || st.Holders[1].Mode != "read" {
		t.Fatalf("status --json of the rwlock: %+v, %v\n%v", st, err, r)
	}

	r = c.run(t, "list")
	expect(t, r, 0, "KIND", "WEIGHT", "semaphore/3", "mutex", "rwlock", "×2", "read", m.Owner())
	for _, o := range []string{big.Owner(), small.Owner(), r1.Owner(), r2.Owner()} {
		if !strings.Contains(r.stdout, o) {
			t.Errorf("list lacks holder %s:\n%s", o, r.stdout)
		}
	}
	r = c.run(t, "list", "--json")
	var infos []infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil || len(infos) != 3 || infos[1].Name != "pool" || len(infos[1].Holders) != 2 {
		t.Fatalf("list --json: %+v, %v", infos, err)
	}

	expect(t, c.run(t, "leaks"), 0, "no leaks")
	r = c.run(t, "leaks", "--max-ttl", "30s")
	expect(t, r, exitFailed, "semaphore: holder "+big.Owner()+" ×2", "rwlock: holder "+r1.Owner()+" read", "mutex")
	if strings.Contains(r.stdout, small.Owner()) {
		t.Errorf("leaks reports the holder with a 20s ttl:\n%s", r.stdout)
	}
	r = c.run(t, "leaks", "--json", "--max-ttl", "30s", "po")
	var leaks []leakJSON
	if err := json.Unmarshal([]byte(r.stdout), &leaks); err != nil || len(leaks) != 1 || leaks[0].Holder != big.Owner() || leaks[0].Weight != 2 || leaks[0].Type != "semaphore" {
		t.Fatalf("leaks --json: %+v, %v", leaks, err)
	}
}

// TestRunBusyShared: a busy semaphore or reader-writer lock is described
// as it is: a half-full semaphore has too few free permits, a reader
// behind a queued writer is kept for the waiters queued first; neither is
// "held by another owner".
func TestRunBusyShared(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	lib := serverLibrary(t, s.url)
	ctx := testCtx(t)
	notSaid := func(r result, s string) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("output says %q:\n%v", s, r)
		}
	}

	l, err := lib.Semaphore("half", 3).Acquire(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	r := c.run(t, "run", "--wait", "0", "--limit", "3", "--weight", "3", "half", "--", "true")
	expect(t, r, exitBusy, `"half" has fewer than 3 free permits`)
	notSaid(r, "held by another owner")

	rw := lib.RWMutex("cache")
	for range 2 {
		r, err := rw.RLock(ctx, distlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release(ctx)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _, _ = rw.Lock(wctx) }()
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if info, err := rw.Inspect(ctx); err == nil && info.Waiters == 1 {
			break
		}
		if time.Since(start) > patience {
			t.Fatal("the writer did not queue")
		}
	}
	r = c.run(t, "run", "--wait", "0", "--shared", "cache", "--", "true")
	expect(t, r, exitBusy, `"cache" is kept for the waiters queued first`)
	notSaid(r, "held by another owner")
	notSaid(r, "free")
}
