//go:build unix && !lite

package main

// A stranger's tests of distlock run, elect and serve as a user drives
// them: real processes (the binary TestMain builds, redis-server, distlock
// serve) on free loopback ports, signals sent from outside, and the lock
// checked from another process afterwards.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/redistest"
)

// strangerProc is a distlock process started by a stranger's test.
type strangerProc struct {
	cmd       *exec.Cmd
	out, errb *lockedBuffer
	start     time.Time
	done      chan struct{}
	res       result
}

// startStranger starts the binary with args; the test's cleanup kills it
// (and its command's process group, when pgidFile names one) if it still
// runs.
func startStranger(t *testing.T, c cli, args ...string) *strangerProc {
	t.Helper()
	cmd := c.command(args...)
	p := &strangerProc{cmd: cmd, out: &lockedBuffer{}, errb: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.errb
	// A command left running (by a killed distlock, or a broken one) holds
	// the output pipes: Wait returns once distlock has exited anyway.
	cmd.WaitDelay = time.Second
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		p.res = result{code: cmd.ProcessState.ExitCode(), stdout: p.out.String(), stderr: p.errb.String(), took: time.Since(p.start)}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exited reports whether the process has exited.
func (p *strangerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to timeout for the process to exit and returns what it did.
func (p *strangerProc) waitExit(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
		return p.res
	case <-time.After(timeout):
		t.Fatalf("distlock %q did not exit within %v\nstdout: %s\nstderr: %s", p.cmd.Args[1:], timeout, p.out, p.errb)
	}
	return result{}
}

// signal sends sig to the distlock process.
func (p *strangerProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// strangerEvent is a line a test's command appended to its log:
// "ID KIND NANOS [PID]".
type strangerEvent struct {
	id, kind string
	at       int64
	pid      int
}

func readEvents(t *testing.T, path string) []strangerEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var evs []strangerEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("bad line %q in\n%s", line, data)
		}
		ev := strangerEvent{id: f[0], kind: f[1], at: at}
		if len(f) > 3 {
			ev.pid, _ = strconv.Atoi(f[3])
		}
		evs = append(evs, ev)
	}
	return evs
}

// findEvents returns the events of id of kind.
func findEvents(evs []strangerEvent, id, kind string) []strangerEvent {
	var out []strangerEvent
	for _, e := range evs {
		if e.id == id && e.kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits until the log has an event of id of kind, and returns the first.
func waitEvent(t *testing.T, log, id, kind string) strangerEvent {
	t.Helper()
	var ev strangerEvent
	enginetest.WaitFor(t, patience, id+" "+kind+" in "+log, func() bool {
		if evs := findEvents(readEvents(t, log), id, kind); len(evs) > 0 {
			ev = evs[0]
			return true
		}
		return false
	})
	return ev
}

// loggingChild is a command that logs "$ID start NANOS PID" (with its term or
// fence), then waits; on SIGTERM it logs "$ID term NANOS" and exits 0. It
// waits in the shell's wait builtin, which a trapped signal interrupts at
// once.
const loggingChild = `trap 'echo "$ID term $(date +%s%N)" >> "$LOG"; kill $! 2>/dev/null; exit 0' TERM; ` +
	`sleep 1000 & echo "$ID start $(date +%s%N) $$ ${DISTLOCK_TERM:-$DISTLOCK_FENCE}" >> "$LOG"; wait`

// killGroupOf kills the process group led by pid (a test's command that
// may have been left running by a broken distlock) at cleanup.
func killGroupOf(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
}

// redisAndServer runs f on a Redis server and on a distlock serve process
// on the embedded engine.
func redisAndServer(t *testing.T, f func(t *testing.T, c cli)) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		f(t, cli{redis: redistest.Start(t).URL()})
	})
	t.Run("server", func(t *testing.T) {
		t.Parallel()
		url, _ := serveProcess(t)
		f(t, cli{env: map[string]string{"DISTLOCK_SERVER": url}})
	})
}

// TestStrangerRunForwardsSignalsAndReleases: SIGINT, SIGHUP, SIGTERM,
// SIGUSR1 and SIGUSR2 sent to distlock run reach the command, which handles them and exits with a code
// of its own: distlock exits with that code, and the lock (ttl 1m) is
// released at once: another distlock run --wait 0 gets it.
func TestStrangerRunForwardsSignalsAndReleases(t *testing.T) {
	t.Parallel()
	redisAndServer(t, func(t *testing.T, c cli) {
		for _, tc := range []struct {
			sig  syscall.Signal
			code int
		}{{syscall.SIGINT, 7}, {syscall.SIGHUP, 9}, {syscall.SIGTERM, 11}, {syscall.SIGUSR1, 13}, {syscall.SIGUSR2, 15}} {
			name := "fwd-" + strconv.Itoa(int(tc.sig))
			up := filepath.Join(t.TempDir(), "up")
			c := c
			c.env = mergeEnv(c.env, map[string]string{"UP": up})
			script := `trap 'exit 7' INT; trap 'exit 9' HUP; trap 'exit 11' TERM; trap 'exit 13' USR1; trap 'exit 15' USR2; sleep 1000 & echo up > "$UP"; wait`
			p := startStranger(t, c, "run", "--ttl", "1m", name, "--", "sh", "-c", script)
			waitFile(t, up, patience)
			p.signal(t, tc.sig)
			expect(t, p.waitExit(t, patience), tc.code)
			// Released at once: the lease had a minute left.
			expect(t, c.run(t, "run", "--wait", "0", name, "--", "true"), 0)
		}
	})
}

// mergeEnv returns a copy of a with b's entries added.
func mergeEnv(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// TestStrangerRunSignalWhileWaitingLeavesNothing: distlock run waiting for
// a busy lock gets SIGINT: it exits 130 without running its command, and
// leaves no waiter in the lock's queue (status shows 0 waiters, the holder
// untouched).
func TestStrangerRunSignalWhileWaitingLeavesNothing(t *testing.T) {
	t.Parallel()
	redisAndServer(t, func(t *testing.T, c cli) {
		ran := filepath.Join(t.TempDir(), "ran")
		out := c.run(t, "acquire", "--ttl", "1m", "busy")
		expect(t, out, 0)
		owner := parseAssignments(t, out.stdout)["DISTLOCK_OWNER"]
		c.env = mergeEnv(c.env, map[string]string{"RAN": ran})
		p := startStranger(t, c, "run", "--wait", "50s", "busy", "--", "sh", "-c", `echo ran > "$RAN"`)
		enginetest.WaitFor(t, patience, "the run waits in the queue", func() bool {
			return strings.Contains(c.run(t, "status", "busy").stdout, "waiters:           1")
		})
		p.signal(t, syscall.SIGINT)
		expect(t, p.waitExit(t, patience), exitSignal+int(syscall.SIGINT), "not started")
		if _, err := os.Stat(ran); err == nil {
			t.Error("the command ran")
		}
		st := c.run(t, "status", "busy")
		expect(t, st, 0, "waiters:           0", owner)
	})
}

// TestStrangerRunLostWhenKeyDeleted deletes a held lock's key in Redis
// behind distlock run's back (a mutex, a semaphore's permit, a reader of a
// reader-writer lock): at its next renewal distlock learns it, sends the
// command SIGTERM, exits 76 and never restarts it; the lock is free for
// another run afterwards.
func TestStrangerRunLostWhenKeyDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  string
		flags []string
		key   string
	}{
		{"mutex", nil, "distlock:{%s}"},
		{"semaphore", []string{"--limit", "2"}, "distlock:{%s}:s"},
		{"reader", []string{"--shared"}, "distlock:{%s}:s"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			log := filepath.Join(t.TempDir(), "log")
			c := cli{redis: srv.URL(), env: map[string]string{"LOG": log, "ID": "A"}}
			name := "deleted-" + tc.kind
			args := append(append([]string{"run", "--ttl", "1500ms", "--grace", "20s"}, tc.flags...), name, "--", "sh", "-c", loggingChild)
			p := startStranger(t, c, args...)
			st := waitEvent(t, log, "A", "start")
			killGroupOf(t, st.pid)
			if err := srv.Del(testCtx(t), strings.ReplaceAll(tc.key, "%s", name)); err != nil {
				t.Fatal(err)
			}
			r := p.waitExit(t, patience)
			expect(t, r, exitLost, "lost", "SIGTERM")
			evs := readEvents(t, log)
			if len(findEvents(evs, "A", "term")) != 1 || len(findEvents(evs, "A", "start")) != 1 {
				t.Errorf("want one start and one SIGTERM of the command, got:\n%v", evs)
			}
			if !processGone(st.pid) {
				t.Errorf("the command (pid %d) still runs after distlock exited", st.pid)
			}
			expect(t, c.run(t, append(append([]string{"run", "--wait", "0"}, tc.flags...), name, "--", "true")...), 0)
		})
	}
}

// TestStrangerRunRedisFrozenSecondWaits: distlock run A holds a lock and
// distlock run B waits for it; Redis is frozen (SIGSTOP) past the ttl. A
// must stop its command and exit 76 while Redis is still frozen (it cannot
// know whether B got the lock); once Redis continues, B runs its command,
// which starts only after A's command was told and gone.
func TestStrangerRunRedisFrozenSecondWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	log := filepath.Join(t.TempDir(), "log")
	env := func(id string) cli {
		return cli{redis: srv.URL(), env: map[string]string{"LOG": log, "ID": id}}
	}
	a := startStranger(t, env("A"), "run", "--ttl", "1s", "--grace", "20s", "frozen", "--", "sh", "-c", loggingChild)
	aStart := waitEvent(t, log, "A", "start")
	killGroupOf(t, aStart.pid)
	b := startStranger(t, env("B"), "run", "--ttl", "1s", "--wait", "50s", "frozen", "--", "sh", "-c", loggingChild)
	lib := library(t, srv)
	enginetest.WaitFor(t, patience, "B waits in the queue", func() bool {
		info, err := lib.Inspect(testCtx(t), "frozen")
		return err == nil && info.Waiters == 1
	})
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Resume()
		}
	}()
	ra := a.waitExit(t, patience)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	expect(t, ra, exitLost, "lost")
	bStart := waitEvent(t, log, "B", "start")
	killGroupOf(t, bStart.pid)
	aTerm := findEvents(readEvents(t, log), "A", "term")
	if len(aTerm) != 1 || aTerm[0].at > bStart.at {
		t.Errorf("B's command started at %d, before A's was told (%v)", bStart.at, aTerm)
	}
	if bStart.fenceOrTerm(t, log) <= aStart.fenceOrTerm(t, log) {
		t.Errorf("B's fence does not exceed A's:\n%v", readEvents(t, log))
	}
	b.signal(t, syscall.SIGTERM)
	expect(t, b.waitExit(t, patience), 0)
}

// fenceOrTerm is the fence (or term) a start event logged.
func (e strangerEvent) fenceOrTerm(t *testing.T, log string) uint64 {
	t.Helper()
	data, _ := os.ReadFile(log)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == e.id && f[1] == "start" && f[2] == strconv.FormatInt(e.at, 10) {
			n, err := strconv.ParseUint(f[4], 10, 64)
			if err != nil {
				t.Fatalf("bad fence in %q", line)
			}
			return n
		}
	}
	t.Fatalf("no start line of %s at %d in\n%s", e.id, e.at, data)
	return 0
}

// TestStrangerStoppedHolderContinued stops (SIGSTOP) the distlock process
// that holds a lock (run) or leads an election (elect) past its ttl: the
// other process takes over and runs its command. Once continued, the
// stopped one learns the loss at once: its command is told (SIGTERM) and
// gone, run exits 76, elect campaigns again without running its command
// while the other leads, and neither disturbs the new holder (still
// holding, same owner). When the new leader's command ends, the continued
// elect is elected again and runs its command with a higher term.
func TestStrangerStoppedHolderContinued(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"run", "elect"} {
		t.Run(verb, func(t *testing.T) {
			t.Parallel()
			redisAndServer(t, func(t *testing.T, c cli) {
				log := filepath.Join(t.TempDir(), "log")
				as := func(id string) cli {
					cc := c
					cc.env = mergeEnv(c.env, map[string]string{"LOG": log, "ID": id})
					return cc
				}
				args := []string{verb, "--ttl", "1s", "--grace", "20s"}
				if verb == "run" {
					args = append(args, "--wait", "50s")
				}
				args = append(args, "stopped", "--", "sh", "-c", loggingChild)
				a := startStranger(t, as("A"), args...)
				aStart := waitEvent(t, log, "A", "start")
				killGroupOf(t, aStart.pid)
				a.signal(t, syscall.SIGSTOP)
				b := startStranger(t, as("B"), args...)
				bStart := waitEvent(t, log, "B", "start")
				killGroupOf(t, bStart.pid)
				owner := statusOwner(t, c, "stopped")

				a.signal(t, syscall.SIGCONT)
				aTerm := waitEvent(t, log, "A", "term")
				if !processGone(aStart.pid) {
					enginetest.WaitFor(t, patience, "A's command gone after its SIGTERM", func() bool { return processGone(aStart.pid) })
				}
				if verb == "run" {
					expect(t, a.waitExit(t, patience), exitLost, "lost")
				} else {
					enginetest.WaitFor(t, patience, "the continued elect says it campaigns again", func() bool {
						return strings.Contains(a.errb.String(), "campaigning for \"stopped\" again")
					})
				}
				if got := statusOwner(t, c, "stopped"); got != owner {
					t.Errorf("the holder changed from %q to %q when the stopped process continued", owner, got)
				}
				if n := len(findEvents(readEvents(t, log), "A", "start")); n != 1 {
					t.Errorf("A's command started %d times while B held the lock", n)
				}
				if aTerm.at < aStart.at {
					t.Errorf("bad log:\n%v", readEvents(t, log))
				}
				b.signal(t, syscall.SIGTERM)
				expect(t, b.waitExit(t, patience), 0)
				if verb == "elect" {
					// B resigned: A is elected again, with a higher term.
					var again strangerEvent
					enginetest.WaitFor(t, patience, "A elected again", func() bool {
						s := findEvents(readEvents(t, log), "A", "start")
						if len(s) == 2 {
							again = s[1]
							return true
						}
						return false
					})
					killGroupOf(t, again.pid)
					if again.fenceOrTerm(t, log) <= bStart.fenceOrTerm(t, log) {
						t.Errorf("A's new term does not exceed B's:\n%v", readEvents(t, log))
					}
					a.signal(t, syscall.SIGTERM)
					expect(t, a.waitExit(t, patience), 0)
				}
			})
		})
	}
}

// statusOwner returns the owner token status shows for name ("" when free).
func statusOwner(t *testing.T, c cli, name string) string {
	t.Helper()
	r := c.run(t, "status", "--json", name)
	if r.code != 0 {
		t.Fatalf("status: %v", r)
	}
	i := strings.Index(r.stdout, `"owner":"`)
	if i < 0 {
		return ""
	}
	rest := r.stdout[i+len(`"owner":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestStrangerElectKilledLeaderHandsOver: the leading distlock elect is
// killed (SIGKILL): its guard stops its command (SIGTERM), and the other
// candidate is elected once the ttl runs out, its command starting only
// after the killed leader's was told.
func TestStrangerElectKilledLeaderHandsOver(t *testing.T) {
	t.Parallel()
	redisAndServer(t, func(t *testing.T, c cli) {
		log := filepath.Join(t.TempDir(), "log")
		as := func(id string) cli {
			cc := c
			cc.env = mergeEnv(c.env, map[string]string{"LOG": log, "ID": id})
			return cc
		}
		args := []string{"elect", "--ttl", "1s", "--grace", "20s", "killed", "--", "sh", "-c", loggingChild}
		a := startStranger(t, as("A"), args...)
		aStart := waitEvent(t, log, "A", "start")
		killGroupOf(t, aStart.pid)
		b := startStranger(t, as("B"), args...)
		enginetest.WaitFor(t, patience, "B campaigns", func() bool {
			return strings.Contains(c.run(t, "status", "killed").stdout, "waiters:           1")
		})
		a.signal(t, syscall.SIGKILL)
		a.waitExit(t, patience)
		bStart := waitEvent(t, log, "B", "start")
		killGroupOf(t, bStart.pid)
		aTerm := findEvents(readEvents(t, log), "A", "term")
		if len(aTerm) != 1 || aTerm[0].at > bStart.at {
			t.Errorf("B's command started before A's was told: %v", readEvents(t, log))
		}
		if !processGone(aStart.pid) {
			t.Errorf("A's command (pid %d) still runs", aStart.pid)
		}
		b.signal(t, syscall.SIGTERM)
		expect(t, b.waitExit(t, patience), 0)
	})
}

// TestStrangerRunBadInputStoresNothing: usage errors exit 64 before
// anything reaches the backend: no key is written in Redis.
func TestStrangerRunBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := cli{redis: srv.URL()}
	long := strings.Repeat("n", 600)
	for _, args := range [][]string{
		{"run", "", "--", "true"},
		{"run", long, "--", "true"},
		{"run", "--ttl", "0", "bad", "--", "true"},
		{"run", "--ttl", "25h", "bad", "--", "true"},
		{"run", "--ttl", "1", "bad", "--", "true"},
		{"run", "--wait", "-1s", "bad", "--", "true"},
		{"run", "--limit", "2", "--weight", "3", "bad", "--", "true"},
		{"run", "--weight", "2", "bad", "--", "true"},
		{"run", "bad", "--also", "bad", "--", "true"},
		{"run", "--limit", "2", "bad", "--also", "other", "--", "true"},
		{"elect", "--ttl", "0", "bad", "--", "true"},
		{"elect", "", "--", "true"},
		{"elect", "--value", "", "bad", "--", "true"},
	} {
		r := c.run(t, args...)
		expect(t, r, exitUsage)
		if r.stdout != "" {
			t.Errorf("%q printed on stdout: %q", args, r.stdout)
		}
	}
	n, err := srv.Client().DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		keys, _ := srv.Client().Keys(context.Background(), "*").Result()
		t.Errorf("usage errors stored %d keys: %q", n, keys)
	}
}

// TestStrangerElectCampaignsAgainAfterOutage: the backend stops answering
// (Redis, or the distlock server, frozen with SIGSTOP) for several seconds
// while distlock elect leads. It loses the leadership, stops its command
// and, as it says, campaigns again: once the backend answers again (within
// the failure budget a waiting campaign has, 20 s) it is elected again and
// runs its command again, with a higher term. It used to re-open the
// backend to campaign again, whose reachability check gives up after 5 s:
// it exited 69 during an outage that a standby candidate, waiting in its
// campaign all along, outlives.
func TestStrangerElectCampaignsAgainAfterOutage(t *testing.T) {
	t.Parallel()
	const outage = 8 * time.Second // after the loss: beyond the 5 s check, within the 20 s budget
	for _, backend := range []string{"redis", "server"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "log")
			c := cli{env: map[string]string{"LOG": log, "ID": "A"}}
			var pause, resume func() error
			if backend == "redis" {
				srv := redistest.Start(t)
				c.redis = srv.URL()
				pause, resume = srv.Pause, srv.Resume
			} else {
				url, proc, _ := serveProc(t)
				c.env["DISTLOCK_SERVER"] = url
				pause = func() error { return proc.Signal(syscall.SIGSTOP) }
				resume = func() error { return proc.Signal(syscall.SIGCONT) }
			}
			a := startStranger(t, c, "elect", "--ttl", "1s", "--grace", "20s", "outage", "--", "sh", "-c", loggingChild)
			first := waitEvent(t, log, "A", "start")
			killGroupOf(t, first.pid)
			if err := pause(); err != nil {
				t.Fatal(err)
			}
			resumed := false
			defer func() {
				if !resumed {
					_ = resume()
				}
			}()
			waitEvent(t, log, "A", "term")
			enginetest.WaitFor(t, patience, "elect says it campaigns again", func() bool {
				return strings.Contains(a.errb.String(), `campaigning for "outage" again`)
			})
			lostAt := time.Now()
			enginetest.WaitFor(t, patience, "the outage", func() bool {
				if a.exited() {
					t.Fatalf("distlock elect exited during the outage, %v after the loss, instead of campaigning again: %v",
						time.Since(lostAt).Round(time.Millisecond), a.res)
				}
				return time.Since(lostAt) >= outage
			})
			if err := resume(); err != nil {
				t.Fatal(err)
			}
			resumed = true
			var again strangerEvent
			enginetest.WaitFor(t, patience, "A elected again", func() bool {
				if a.exited() {
					t.Fatalf("distlock elect exited: %v", a.res)
				}
				if s := findEvents(readEvents(t, log), "A", "start"); len(s) == 2 {
					again = s[1]
					return true
				}
				return false
			})
			killGroupOf(t, again.pid)
			if again.fenceOrTerm(t, log) <= first.fenceOrTerm(t, log) {
				t.Errorf("the new term does not exceed the first:\n%v", readEvents(t, log))
			}
			a.signal(t, syscall.SIGTERM)
			expect(t, a.waitExit(t, patience), 0)
		})
	}
}
