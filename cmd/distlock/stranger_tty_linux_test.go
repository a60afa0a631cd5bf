//go:build linux && !lite

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/redistest"
)

// openPTY opens a pseudo-terminal: its master and its slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		_ = m.Close()
		t.Fatalf("TIOCSPTLCK: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		_ = m.Close()
		t.Fatalf("TIOCGPTN: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		_ = m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(); _ = s.Close() })
	return m, s
}

// procState is the state letter of pid in /proc ("" when it is gone).
func procState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	end := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[end+1:]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// TestStrangerRunInTerminalWithTostop runs distlock run as the foreground
// job of a terminal (a pseudo-terminal, with a job-control shell) whose
// "stty tostop" is set: background processes that write to it are stopped
// by SIGTTOU. distlock hands the terminal's foreground to its command, so
// distlock itself is in the background while the command runs. When the
// lock is lost (its key deleted), distlock writes why on the terminal and
// stops the command: it used to be stopped by SIGTTOU at that write,
// before sending SIGTERM, and the command ran on without the lock, with
// nobody to stop it (the guard acts only when distlock is gone).
func TestStrangerRunInTerminalWithTostop(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	srv := redistest.Start(t)
	rc := filepath.Join(t.TempDir(), "rc")
	// set -m: job control, so that distlock runs as a foreground job of its
	// own (a process group that is not orphaned, as in an interactive shell).
	script := `stty tostop; set -m; "$BIN" run --ttl 1500ms --grace 20s tty -- sh -c "$CHILD"; echo $? > "$RC"; exec sleep 1000`
	log, start, distlockPid := inTerminal(t, sh, cli{redis: srv.URL(), env: map[string]string{"RC": rc}}, script)
	if err := srv.Del(testCtx(t), "distlock:{tty}"); err != nil {
		t.Fatal(err)
	}
	// A job-control shell reports a stopped job as 128+SIGTTOU (150).
	code := strings.TrimSpace(waitFile(t, rc, patience))
	if code != strconv.Itoa(exitLost) {
		t.Errorf("distlock run exited %s (state %q), want %d", code, procState(distlockPid), exitLost)
	}
	if n := len(findEvents(readEvents(t, log), "A", "term")); n != 1 {
		t.Errorf("the command got %d SIGTERMs, want 1", n)
	}
	if !processGone(start.pid) {
		t.Errorf("the command (pid %d) still runs", start.pid)
	}
}

// TestStrangerRunBackgroundJobWithTostop: distlock run started as a
// background job ("&") of a job-control shell on a terminal with "stty
// tostop". When the lock is lost, the command must get its SIGTERM even
// though distlock, writing why on the terminal, is stopped there by
// SIGTTOU (as every background job that writes is, with tostop): distlock
// used to write first and signal after, so the command ran on without the
// lock for as long as distlock stayed stopped.
func TestStrangerRunBackgroundJobWithTostop(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	srv := redistest.Start(t)
	script := `stty tostop; set -m; "$BIN" run --ttl 1500ms --grace 20s bgtty -- sh -c "$CHILD" & exec sleep 1000`
	log, start, _ := inTerminal(t, sh, cli{redis: srv.URL()}, script)
	if err := srv.Del(testCtx(t), "distlock:{bgtty}"); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, log, "A", "term")
	enginetest.WaitFor(t, patience, "the command gone after its SIGTERM", func() bool { return processGone(start.pid) })
}

// TestStrangerVerboseBackgroundJobWithTostop: distlock run -v (or elect
// -v), a background job on a terminal with "stty tostop", writes its
// progress line right after the command started, and is stopped there by
// SIGTTOU, with its whole process group, until someone brings it to the
// foreground: it renews nothing and, its lease ended, cannot stop the
// command. Its guard must. It could not: it was told the lease's deadline
// only after that line, and it was in distlock's process group, stopped
// with it before it ignored SIGTTOU. The command ran on past its lease,
// beside the next holder, for as long as distlock stayed stopped. Each
// fault alone fails this test (the command still runs a minute later).
func TestStrangerVerboseBackgroundJobWithTostop(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	for _, sub := range []string{"run", "elect"} {
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			script := `stty tostop; set -m; "$BIN" ` + sub + ` -v --ttl 1s --grace 300ms bgverbose -- sh -c "$CHILD" & exec sleep 1000`
			log, start, distlockPid := inTerminal(t, sh, cli{redis: srv.URL()}, script)
			enginetest.WaitFor(t, patience, "distlock stopped by SIGTTOU at its progress line", func() bool { return procState(distlockPid) == "T" })
			waitEvent(t, log, "A", "term")
			enginetest.WaitFor(t, patience, "the command gone after its guard's SIGTERM", func() bool { return processGone(start.pid) })
			if procState(distlockPid) != "T" {
				t.Fatalf("distlock (state %q) was continued: the test saw nothing of its guard", procState(distlockPid))
			}
		})
	}
}

// inTerminal runs script with sh in a new session on a pseudo-terminal,
// with c's environment and BIN (distlock), CHILD (a command for distlock
// to run: it logs its start, with its pid and its parent's, and its
// SIGTERM to LOG, as "A") and LOG set. It returns LOG, the command's start
// and the pid of its parent, distlock. Everything is killed at the end.
func inTerminal(t *testing.T, sh string, c cli, script string) (log string, start strangerEvent, distlockPid int) {
	t.Helper()
	master, slave := openPTY(t)
	screen := &lockedBuffer{}
	go func() { _, _ = io.Copy(screen, master) }() // the terminal's screen
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the terminal:\n%s", screen)
		}
	})
	log = filepath.Join(t.TempDir(), "log")
	// The command logs its parent, distlock, in its fence's field.
	child := `trap 'echo "$ID term $(date +%s%N)" >> "$LOG"; kill $! 2>/dev/null; exit 0' TERM; ` +
		`sleep 1000 & echo "$ID start $(date +%s%N) $$ $PPID" >> "$LOG"; wait`
	if c.env == nil {
		c.env = map[string]string{}
	}
	c.env["LOG"], c.env["ID"], c.env["BIN"], c.env["CHILD"] = log, "A", binPath, child
	cmd := c.command()
	cmd.Path, cmd.Args = sh, []string{"sh", "-c", script}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	start = waitEvent(t, log, "A", "start")
	killGroupOf(t, start.pid)
	distlockPid = int(start.fenceOrTerm(t, log))
	t.Cleanup(func() {
		_ = syscall.Kill(distlockPid, syscall.SIGCONT)
		_ = syscall.Kill(distlockPid, syscall.SIGKILL)
	})
	return log, start, distlockPid
}
