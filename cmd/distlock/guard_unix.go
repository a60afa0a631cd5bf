//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// guardArg is the hidden first argument that makes distlock a guard: the
// process that stops a command's process group when the distlock run or
// elect supervising it dies without doing so itself (SIGKILL, the OOM
// killer, a crash). Without it the command would run on after the lease,
// no longer renewed, ran out, beside the next holder.
const guardArg = "__distlock-guard"

// guard is the guard process of one command, with the write end of the
// pipe that is its standard input: distlock writes the command's process
// group on it (arm), one line, as soon as the command started; the guard
// acts when the pipe then reaches end of file without a word from
// distlock, which happens when distlock dies. It is started before the
// command, so that no moment exists when the command runs unguarded (but
// the one write between the command's start and arm).
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

// startGuard starts a guard, for the command about to start. When it
// cannot, it says so and returns nil: the command runs unguarded, as
// before.
func (a *app) startGuard(cmdName string, grace time.Duration) *guard {
	exe := "/proc/self/exe" // this binary, even if its file was replaced meanwhile
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			fmt.Fprintf(a.stderr, "distlock %s: cannot start the guard that stops the command if distlock dies: %v\n", cmdName, err)
			return nil
		}
	}
	r, w, err := os.Pipe() // close-on-exec: the command never holds w
	if err != nil {
		fmt.Fprintf(a.stderr, "distlock %s: cannot start the guard that stops the command if distlock dies: %v\n", cmdName, err)
		return nil
	}
	g := exec.Command(exe, guardArg, strconv.Itoa(os.Getpid()), grace.String())
	g.Args[0] = os.Args[0] // ps shows distlock, not /proc/self/exe
	g.Stdin, g.Stderr = r, os.Stderr
	err = g.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		fmt.Fprintf(a.stderr, "distlock %s: cannot start the guard that stops the command if distlock dies: %v\n", cmdName, err)
		return nil
	}
	return &guard{cmd: g, w: w}
}

// arm tells the guard the command's process group (ch's): the group it
// stops if distlock dies.
func (g *guard) arm(ch *child) {
	if g == nil {
		return
	}
	_, _ = fmt.Fprintf(g.w, "%d\n", ch.pgid)
}

// standDown tells the guard that distlock has done its work (the command's
// group is gone or was stopped), and waits for it to exit.
func (g *guard) standDown() {
	if g == nil {
		return
	}
	_, _ = g.w.Write([]byte{'.'})
	_ = g.w.Close()
	_ = g.cmd.Wait()
}

// runGuard is the guard process: args are the pid of the distlock that
// started it and the grace between SIGTERM and SIGKILL; its standard input
// brings the command's process group (a line, arm), then a word when
// distlock stood it down, or end of file when distlock died. It ignores
// the signals a terminal or a shell sends to distlock's process group
// (distlock passes them on itself).
func runGuard(args []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTTOU, syscall.SIGPIPE)
	if len(args) != 2 {
		return exitUsage
	}
	parent, err1 := strconv.Atoi(args[0])
	grace, err2 := time.ParseDuration(args[1])
	if err1 != nil || err2 != nil {
		return exitUsage
	}
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	pgid, perr := strconv.Atoi(strings.TrimSuffix(line, "\n"))
	if err != nil || perr != nil || pgid <= 1 {
		// No group named: distlock stood the guard down, or died, before
		// the command started (it ran nothing).
		return exitOK
	}
	if _, err := in.ReadByte(); err == nil {
		return exitOK // distlock stood the guard down: it took care of the group
	}
	// End of file without a word: distlock is gone.
	ch := &child{pgid: pgid}
	if !ch.groupAlive() {
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "distlock: the distlock process (pid %d) that held the lock for this command is gone (killed?); "+
		"its lock is not renewed any more: SIGTERM to the command's process group now, SIGKILL in %v\n", parent, grace)
	ch.terminate()
	deadline := time.Now().Add(grace)
	for ch.groupAlive() && time.Now().Before(deadline) {
		time.Sleep(groupPoll)
	}
	if ch.groupAlive() {
		ch.kill()
	}
	return exitOK
}
