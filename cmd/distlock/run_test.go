//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lagprobe"
	"github.com/distlock/distlock/internal/redistest"
)

// TestRunMutualExclusion runs several distlock run processes on one name at
// once: their commands never overlap, and each sees a higher fencing token
// than the one before.
func TestRunMutualExclusion(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	log := filepath.Join(t.TempDir(), "log")
	script := `echo "start $DISTLOCK_FENCE $(date +%s%N)" >> "$LOG"; sleep 0.15; echo "end $DISTLOCK_FENCE $(date +%s%N)" >> "$LOG"`
	c := cli{redis: srv.URL(), env: map[string]string{"LOG": log}}
	const n = 4
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Go(func() {
			args := []string{"run", "--wait", "20s", "--ttl", "2s"}
			if i%2 == 1 {
				args = append(args, "--fair") // fair and default waiters in one queue
			}
			results[i] = c.run(t, append(args, "exclusive", "--", "sh", "-c", script)...)
		})
	}
	wg.Wait()
	for _, r := range results {
		expect(t, r, 0)
	}

	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		kind  string
		fence uint64
		at    int64
	}
	var events []event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("bad line %q in\n%s", line, data)
		}
		fence, err1 := strconv.ParseUint(f[1], 10, 64)
		at, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", line)
		}
		events = append(events, event{f[0], fence, at})
	}
	if len(events) != 2*n {
		t.Fatalf("%d events, want %d:\n%s", len(events), 2*n, data)
	}
	// Appends happen in real-time order, so the file must read
	// start, end, start, end... with one fence per interval, each
	// interval ending before the next starts, fences increasing.
	for i := 0; i < len(events); i += 2 {
		s, e := events[i], events[i+1]
		if s.kind != "start" || e.kind != "end" || s.fence != e.fence || e.at < s.at {
			t.Fatalf("commands overlapped or interleaved:\n%s", data)
		}
		if i > 0 {
			prev := events[i-1]
			if s.at < prev.at {
				t.Fatalf("command with fence %d started before the previous one ended:\n%s", s.fence, data)
			}
			if s.fence <= prev.fence {
				t.Fatalf("fence %d does not increase over %d:\n%s", s.fence, prev.fence, data)
			}
		}
	}
}

// TestRunLockLostStopsGroup freezes Redis (SIGSTOP) while the command runs:
// renewals go unanswered, the lease runs out, and distlock must stop the
// command's whole process group (a grandchild too) within the lease's
// deadline plus the grace, exit 76 and never restart the command.
//
// The lease's deadline is at most ttl after the freeze (the last confirmed
// renewal was sent before it). The bound checked is ttl + grace + slack,
// where the slack is a fixed allowance for signals and process exits, five
// times the worst scheduling delay this process measured meanwhile, and
// the time distlock and the command's processes spent waiting for a CPU
// (lagprobe: their run-queue accounts); a miss on a machine that was
// measured starved (lagprobe.Starved) is skipped as "machine too slow", on
// a quiet one it fails.
func TestRunLockLostStopsGroup(t *testing.T) {
	t.Parallel()
	const (
		ttl   = time.Second
		grace = 500 * time.Millisecond
		exits = 200 * time.Millisecond // signals and process exits on a quiet machine
	)
	for _, tc := range []struct {
		name   string
		script string
		// sigkill: the group ignores SIGTERM, so only SIGKILL after the
		// grace stops it.
		sigkill bool
	}{
		{"sigterm", `sleep 100 & echo "$$ $!" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; echo run >> "$RUNS"; wait`, false},
		{"sigkill-after-grace", `trap '' TERM; sleep 100 & echo "$$ $!" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; echo run >> "$RUNS"; wait`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			dir := t.TempDir()
			pidFile, runs := filepath.Join(dir, "pids"), filepath.Join(dir, "runs")
			c := cli{redis: srv.URL(), env: map[string]string{"PIDS": pidFile, "RUNS": runs}}
			cmd := c.command("run", "--ttl", ttl.String(), "--grace", grace.String(), "lost", "--", "sh", "-c", tc.script)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ps := pids(t, waitFile(t, pidFile, patience))
			if len(ps) != 2 {
				t.Fatalf("pids %v", ps)
			}
			probe := lagprobe.Start()
			probe.Watch(append([]int{cmd.Process.Pid}, ps...)...)
			pausedAt := time.Now()
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = srv.Resume() }()

			r := wait(t, cmd, start, &out, &errb, patience)
			exited := time.Since(pausedAt)
			lag := probe.Done()
			queued := probe.Waited()
			t.Logf("exited %v after the freeze; scheduling delays up to %v; distlock and its command waited %v for a CPU", exited, lag, queued)
			expect(t, r, exitLost, "lost", "SIGTERM")
			for _, pid := range ps {
				if !processGone(pid) {
					t.Errorf("process %d of the command's group still runs after distlock exited", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			// The group must be gone by the lease's deadline plus the grace.
			// Between them five wake-ups each wait for a CPU: distlock's
			// lease timer, the SIGTERM's delivery, the grace's timer, the
			// SIGKILL's delivery and reaping, and this test's Wait; each can
			// be as late as the worst delay the probe saw.
			if slack := exits + 5*lag + queued + lagprobe.Step; exited > ttl+grace+slack {
				if lag >= lagprobe.Starved || queued >= lagprobe.Starved {
					t.Skipf("machine too slow: distlock exited %v after Redis froze, over ttl+grace+slack = %v, with scheduling delays up to %v and %v waiting for a CPU", exited, ttl+grace+slack, lag, queued)
				}
				t.Errorf("distlock exited %v after Redis froze; want at most ttl+grace (+%v slack, scheduling delays up to %v, %v waiting for a CPU) = %v", exited, slack, lag, queued, ttl+grace+slack)
			}
			if tc.sigkill && exited < grace {
				t.Errorf("distlock exited %v after the pause: it cannot have waited the %v grace before SIGKILL", exited, grace)
			}
			if tc.sigkill && !strings.Contains(r.stderr, "SIGKILL") {
				t.Errorf("no SIGKILL reported:\n%v", r)
			}
			if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 1 {
				t.Errorf("the command ran %d times, want once", strings.Count(string(b), "run"))
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := cli{redis: srv.URL()}

	t.Run("child code", func(t *testing.T) {
		t.Parallel()
		expect(t, c.run(t, "run", "codes-a", "--", "sh", "-c", "exit 3"), 3)
		expect(t, c.run(t, "run", "codes-a", "sh", "-c", "exit 0"), 0) // without --
	})
	t.Run("killed by a signal", func(t *testing.T) {
		t.Parallel()
		expect(t, c.run(t, "run", "codes-b", "--", "sh", "-c", "kill -TERM $$"), exitSignal+int(syscall.SIGTERM))
	})
	t.Run("command not found", func(t *testing.T) {
		t.Parallel()
		expect(t, c.run(t, "run", "codes-c", "--", "/nonexistent/command"), exitNoCmd, "cannot run")
	})
	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		lease, err := library(t, srv).Acquire(testCtx(t), "codes-busy", distlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release(testCtx(t))
		r := c.run(t, "run", "--wait", "200ms", "codes-busy", "--", "true")
		expect(t, r, exitBusy, "held by another owner", "distlock status codes-busy")
		if r.took < 200*time.Millisecond {
			t.Errorf("gave up after %v, before --wait 200ms", r.took)
		}
		expect(t, c.run(t, "run", "--wait", "0", "codes-busy", "--", "true"), exitBusy, "--wait")
	})
	t.Run("backend unreachable", func(t *testing.T) {
		t.Parallel()
		r := cli{redis: "redis://" + closedPort(t)}.run(t, "run", "x", "--", "true")
		expect(t, r, exitBackend, "cannot reach Redis", "DISTLOCK_REDIS")
		if strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("noisy error output:\n%s", r.stderr)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Parallel()
		r := c.run(t, "run", "codes-env", "--", "sh", "-c", `echo "$DISTLOCK_NAME|$DISTLOCK_FENCE|$DISTLOCK_OWNER"`)
		expect(t, r, 0)
		f := strings.Split(strings.TrimSpace(r.stdout), "|")
		if len(f) != 3 || f[0] != "codes-env" || f[2] == "" {
			t.Fatalf("child environment %q", r.stdout)
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err != nil || n == 0 {
			t.Fatalf("DISTLOCK_FENCE %q", f[1])
		}
		info, err := library(t, srv).Inspect(testCtx(t), "codes-env")
		if err != nil || info.Held {
			t.Fatalf("lock not released after the command: %+v, %v", info, err)
		}
	})
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	c := cli{redis: "redis://127.0.0.1:1"} // never reached: usage is checked first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "missing the lock NAME"},
		{[]string{"run", "name"}, "missing the COMMAND"},
		{[]string{"run", "name", "--"}, "missing the COMMAND"},
		{[]string{"run", "--ttl", "abc", "name", "--", "true"}, `invalid value "abc" for flag --ttl: not a duration`},
		{[]string{"run", "name", "--wait", "5", "--", "true"}, "--wait: not a duration"},
		{[]string{"run", "--ttl", "10ms", "name", "--", "true"}, "too short"},
		{[]string{"run", "--grace", "-1s", "name", "--", "true"}, "cannot be negative"},
		{[]string{"run", "--bogus", "name", "--", "true"}, "flag provided but not defined"},
		{[]string{"run", "-n", "0", "name", "--", "true"}, "a semaphore's limit is between 1 and"},
		{[]string{"run", "--shared", "--exclusive", "name", "--", "true"}, "exclude each other"},
		{[]string{"status"}, "missing NAME"},
		{[]string{"status", "a", "b"}, "unexpected argument"},
		{[]string{"extend", "name"}, "missing OWNER"},
		{[]string{"leaks", "--max-ttl", "0s"}, "must be positive"},
		{[]string{"nosuch"}, `unknown command "nosuch"`},
	} {
		r := c.run(t, tc.args...)
		expect(t, r, exitUsage, tc.want)
		if strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%q connected before checking usage", tc.args)
		}
	}

	// Backend settings.
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "needs a shared lock backend, and none is configured: set DISTLOCK_REDIS=redis://host:6379"},
		{map[string]string{"DISTLOCK_REDIS": "redis://a:1,,redis://c:3"}, "empty URL in the list"},
		{map[string]string{"DISTLOCK_SERVER": "locks:8080"}, "from DISTLOCK_SERVER: want http://host:port"},
		{map[string]string{"DISTLOCK_REDIS": "http://x"}, "cannot use"},
	} {
		for _, args := range [][]string{{"run", "x", "--", "true"}, {"status", "x"}, {"list"}} {
			expect(t, cli{env: tc.env}.run(t, args...), exitUsage, tc.want)
		}
	}
	// --redis overrides the environment.
	r := cli{env: map[string]string{"DISTLOCK_REDIS": "redis://a:1,redis://b:2"}}.run(t, "status", "--redis", "redis://"+closedPort(t), "x")
	expect(t, r, exitBackend, "cannot reach Redis")
}

// TestRunSignals: a SIGTERM to distlock reaches the command's group, and
// distlock releases the lock once the command is gone; processes the
// command leaves behind in its group are stopped before the release.
func TestRunSignals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)

	t.Run("forwarded", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pids")
		c := cli{redis: srv.URL(), env: map[string]string{"PIDS": pidFile}}
		cmd := c.command("run", "sig-fwd", "--", "sh", "-c", `sleep 100 & echo "$$ $!" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; wait`)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ps := pids(t, waitFile(t, pidFile, patience))
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := wait(t, cmd, start, &out, &errb, patience)
		expect(t, r, exitSignal+int(syscall.SIGTERM))
		for _, pid := range ps {
			if !processGone(pid) {
				t.Errorf("process %d still runs", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if info, err := lib.Inspect(testCtx(t), "sig-fwd"); err != nil || info.Held {
			t.Errorf("lock not released: %+v, %v", info, err)
		}
	})
	t.Run("leftovers", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		c := cli{redis: srv.URL(), env: map[string]string{"PIDS": pidFile}}
		r := c.run(t, "run", "--grace", "1s", "sig-left", "--", "sh", "-c", `sleep 100 & echo $! > "$PIDS"`)
		expect(t, r, 0, "left processes")
		for _, pid := range pids(t, waitFile(t, pidFile, time.Second)) {
			if !processGone(pid) {
				t.Errorf("left-over process %d still runs after the release", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// TestRunWaitsForRelease: a waiting distlock run gets the lock when the
// holder releases it (woken by the release: the holder's lease outlasts the
// wait), with a fencing token above the holder's.
func TestRunWaitsForRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	lease, err := lib.Acquire(testCtx(t), "handover", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	c := cli{redis: srv.URL()}
	cmd := c.command("run", "--wait", "20s", "handover", "--", "sh", "-c", `echo "$DISTLOCK_FENCE"`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for info, _ := lib.Inspect(testCtx(t), "handover"); info.Waiters == 0; info, _ = lib.Inspect(testCtx(t), "handover") {
		if time.Since(start) > patience {
			t.Fatal("the waiting run never subscribed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := lease.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Its success within --wait 20s, with the lease a minute long, shows
	// that the release woke it.
	r := wait(t, cmd, start, &out, &errb, patience)
	expect(t, r, 0)
	fences := strings.Fields(r.stdout)
	if len(fences) != 1 {
		t.Fatalf("output %q", r.stdout)
	}
	if got, _ := strconv.ParseUint(fences[0], 10, 64); got <= lease.Token() {
		t.Errorf("fence %d not above the previous holder's %d", got, lease.Token())
	}
}
