//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/enginetest"
)

// TestKilledDistlockStopsItsCommand: when distlock run or elect itself is
// killed (SIGKILL, the OOM killer, a crash), it cannot stop its command,
// and the lease, no longer renewed, ends after its ttl: another host may
// then take the lock while the command still runs. The command's process
// group, grandchildren included, must be stopped once distlock is gone,
// also when the SIGKILL went to distlock's whole process group (kill -9
// of a shell's job): it killed the guard too, in that group before.
func TestKilledDistlockStopsItsCommand(t *testing.T) {
	for _, tc := range []struct {
		name, sub string
		group     bool // the SIGKILL goes to distlock's process group
	}{{"run", "run", false}, {"elect", "elect", false}, {"run-group", "run", true}} {
		t.Run(tc.name, func(t *testing.T) {
			sub := tc.sub
			cmd, errFile, children := startWithOrphan(t, sub, "--grace", "300ms", "orphan")
			target := cmd.Process.Pid // distlock leads its own group (startWithOrphan)
			if tc.group {
				target = -target
			}
			if err := syscall.Kill(target, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if alive := waitGone(children, 5*time.Second); len(alive) > 0 {
				out, _ := os.ReadFile(errFile)
				t.Fatalf("distlock %s was killed, but its command's processes %v still run 5s later, without the lock\noutput: %s", sub, alive, out)
			}
			out, _ := os.ReadFile(errFile)
			if !strings.Contains(string(out), "is gone") {
				t.Errorf("the guard did not say why it stopped the command:\n%s", out)
			}
		})
	}
}

// TestStoppedDistlockStopsItsCommand: a distlock run or elect that is
// stopped (SIGSTOP, a debugger) rather than killed renews nothing and
// cannot stop its command when the lease ends, and its guard sees no end
// of file: the command would run beside the next holder until distlock is
// continued. The guard, told each deadline the renewals set, stops the
// command's group itself once the last deadline told has passed: here
// while distlock stays stopped. Continued, distlock run finds its lease
// lost and exits 76.
//
// It failed before the guard was told the deadlines: the command's
// processes still ran 30s after distlock was stopped.
func TestStoppedDistlockStopsItsCommand(t *testing.T) {
	for _, sub := range []string{"run", "elect"} {
		t.Run(sub, func(t *testing.T) {
			cmd, errFile, children := startWithOrphan(t, sub, "--ttl", "1s", "--grace", "300ms", "stopped")
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Process.Signal(syscall.SIGCONT)
				_ = cmd.Wait()
			})
			if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// The lease's deadline is at most its ttl after the stop (its
			// last renewal came before it); the bound below only ends a
			// test whose guard never acts.
			if alive := waitGone(children, patience/2); len(alive) > 0 {
				out, _ := os.ReadFile(errFile)
				t.Fatalf("distlock %s was stopped, but its command's processes %v still run %v later, past its lease\noutput: %s", sub, alive, patience/2, out)
			}
			out, _ := os.ReadFile(errFile)
			if !strings.Contains(string(out), "did not stop it when its lease ended") {
				t.Errorf("the guard did not say why it stopped the command:\n%s", out)
			}
			if sub != "run" {
				return // elect would campaign again: the cleanup kills it
			}
			if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitLost {
				out, _ := os.ReadFile(errFile)
				t.Fatalf("distlock run continued after its lease ended: %v, want exit %d\noutput: %s", err, exitLost, out)
			}
		})
	}
}

// TestGuardLeavesLiveDistlockAlone: while distlock runs and renews, the
// deadlines it tells its guard keep moving, and the guard never stops a
// command whose lease holds, however many ttls it runs.
func TestGuardLeavesLiveDistlockAlone(t *testing.T) {
	r := (cli{env: map[string]string{"DISTLOCK_URL": "mem://"}}).run(t, "run", "--ttl", "1s", "live", "--", "sleep", "3")
	if r.code != 0 || strings.Contains(r.stderr, "did not stop it") {
		t.Fatalf("a command of 3 ttls under a renewed lease: exit %d, want 0\nstderr: %s", r.code, r.stderr)
	}
}

// TestParseTold: the guard reads only well-formed deadlines; anything else
// is ignored (changes no timer).
func TestParseTold(t *testing.T) {
	if left, allowance, ok := parseTold("d1500000000 50000000"); !ok || left != 1500*time.Millisecond || allowance != 50*time.Millisecond {
		t.Errorf("d1500000000 50000000: %v %v %v", left, allowance, ok)
	}
	for _, bad := range []string{"", "d", "d15", "15 5", "d1x 5", "d15 -1", "d15 5 5", "x15 5"} {
		if _, _, ok := parseTold(bad); ok {
			t.Errorf("%q parsed as a deadline", bad)
		}
	}
}

// startWithOrphan starts distlock sub -v with args (flags and the lock's
// name) over a shell that leaves a sleep running in the background, on the
// embedded engine, and returns distlock's process, the file of its output
// and the pids of the shell and the sleep, killed at the test's end;
// distlock runs in a process group of its own. It returns once distlock
// said it runs the command (-v), which it says after telling the guard the
// command's group and the lease's deadline: before that one write, the
// only moment the command runs unguarded (docs/CLI.md), a distlock killed
// or stopped leaves a guard that knows no group.
func startWithOrphan(t *testing.T, sub string, args ...string) (cmd *exec.Cmd, errFile string, children []int) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	script := `sleep 300 & echo "$$ $!" > ` + pidFile + `.tmp && mv ` + pidFile + `.tmp ` + pidFile + `; wait`
	args = append(append([]string{sub, "-v"}, args...), "--", "sh", "-c", script)
	cmd = (cli{env: map[string]string{"DISTLOCK_URL": "mem://"}}).command(args...)
	// A file, not a pipe: an orphan holding a pipe would keep cmd.Wait waiting.
	errFile = filepath.Join(dir, "stderr")
	f, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd.Stdout, cmd.Stderr = f, f
	// A process group of its own, as a shell's job: one signal reaches
	// distlock and what shares its group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	children = pids(t, waitFile(t, pidFile, patience))
	t.Cleanup(func() {
		for _, pid := range children {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	enginetest.WaitFor(t, patience, "distlock -v saying it runs the command", func() bool {
		out, _ := os.ReadFile(errFile)
		return strings.Contains(string(out), "); running ")
	})
	return cmd, errFile, children
}

// waitGone waits up to within for the processes pids to be gone, and
// returns those still there.
func waitGone(pids []int, within time.Duration) (alive []int) {
	deadline := time.Now().Add(within)
	for {
		alive = alive[:0]
		for _, pid := range pids {
			if !processGone(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(10 * time.Millisecond)
	}
}
