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
// pipe that is its standard input. distlock writes on it, one line each:
// the command's process group with the lease's first deadline (arm), as
// soon as the command started; then the lease's time left, whenever a
// renewal moved its deadline (tell);
// "t" when it stops the group itself, the lease lost (stopping); and "."
// when it is done (standDown). The guard acts in two cases:
//
//   - the pipe reaches end of file without the ".": distlock died
//     (SIGKILL, the OOM killer, a crash);
//   - the lease's deadline, as last told, passes (by the allowance told
//     with it) without a newer one and without "t": distlock is stopped
//     (SIGSTOP, a debugger) or hung, and cannot stop the command, which
//     would run on beside the next holder.
//
// It is started before the command, so that no moment exists when the
// command runs unguarded (but the one write between the command's start
// and arm). It runs in a process group of its own: what stops or kills
// distlock's whole group (a terminal's SIGTTOU to a background job that
// writes, its SIGTSTP, a kill of the job) leaves the guard to act. Only a
// guard stopped itself (a paused VM, a signal to its pid) cannot.
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
	// Its own process group: not stopped with distlock's (see guard). It
	// writes on the terminal only with SIGTTOU ignored (runGuard).
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = g.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		fmt.Fprintf(a.stderr, "distlock %s: cannot start the guard that stops the command if distlock dies: %v\n", cmdName, err)
		return nil
	}
	return &guard{cmd: g, w: w}
}

// arm tells the guard, in one write, the command's process group (ch's):
// the group it stops if distlock dies; and the lease's first deadline
// (as tell).
func (g *guard) arm(ch *child, left, allowance time.Duration) {
	if g == nil {
		return
	}
	_, _ = fmt.Fprintf(g.w, "%d\n%s", ch.pgid, toldLine(left, allowance))
}

// tell tells the guard the lease's time left (left, from now), and the
// allowance after it that distlock takes to act on a loss: past both, with
// no newer word, the guard stops the group itself. A write that would
// block (the guard stopped too, its pipe full) is skipped.
func (g *guard) tell(left, allowance time.Duration) { g.say(toldLine(left, allowance)) }

// toldLine is tell's line, read by parseTold.
func toldLine(left, allowance time.Duration) string {
	return fmt.Sprintf("d%d %d\n", left.Nanoseconds(), allowance.Nanoseconds())
}

// stopping tells the guard that distlock is stopping the group itself (the
// lease was lost): the guard sends no SIGTERM of its own, only the SIGKILL
// at the end of the grace if the group is still there and distlock has not
// stood it down.
func (g *guard) stopping() { g.say("t\n") }

// say writes one line (shorter than PIPE_BUF, so written whole or not at
// all), giving up after guardWriteWait.
func (g *guard) say(line string) {
	if g == nil {
		return
	}
	_ = g.w.SetWriteDeadline(time.Now().Add(guardWriteWait))
	_, _ = g.w.WriteString(line)
}

// guardWriteWait bounds a write to the guard: the supervising loop must
// never wait on it.
const guardWriteWait = 10 * time.Millisecond

// standDown tells the guard that distlock has done its work (the command's
// group is gone or was stopped), and waits for it to exit.
func (g *guard) standDown() {
	if g == nil {
		return
	}
	_ = g.w.SetWriteDeadline(time.Time{})
	_, _ = g.w.Write([]byte{'.'})
	_ = g.w.Close()
	_ = g.cmd.Wait()
}

// runGuard is the guard process: args are the pid of the distlock that
// started it and the grace between SIGTERM and SIGKILL; its standard input
// brings the words of guard. It ignores the signals a terminal or a shell
// sends to a process group (its own is not distlock's; distlock passes
// them on to the command itself).
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
	w := &guardWatch{ch: &child{pgid: pgid}, parent: parent, grace: grace}
	words := make(chan string, 16) // read ahead: see drain
	go func() {
		defer close(words)
		for {
			word, err := in.ReadString('\n')
			if word != "" {
				words <- strings.TrimSuffix(word, "\n")
			}
			if err != nil {
				return
			}
		}
	}()
	w.watch(words)
	return exitOK
}

// guardWatch is the guard's state once it knows the command's group.
type guardWatch struct {
	ch     *child
	parent int           // distlock's pid, for messages
	grace  time.Duration // between SIGTERM and SIGKILL

	termed       bool        // a SIGTERM went to the group (distlock's "t", or the guard's)
	term, killT  *time.Timer // the guard's own SIGTERM and SIGKILL, once a deadline was told
	termC, killC <-chan time.Time
}

// watch follows distlock's words until it stood down (".") or is gone
// (end of file), acting on the deadlines told meanwhile.
func (w *guardWatch) watch(words <-chan string) {
	defer w.stopTimers()
	for {
		select {
		case word, ok := <-words:
			if w.heard(word, ok) {
				return
			}
		case <-w.termC:
			// Words that came with the timer go first: a newer deadline
			// (the guard itself was slow to run) re-arms the timers.
			fired := w.term
			if w.drain(words) {
				return
			}
			if w.term != fired {
				continue
			}
			w.termC = nil
			if !w.termed && w.ch.groupAlive() {
				w.termed = true
				fmt.Fprintf(os.Stderr, "distlock: the distlock process (pid %d) that held the lock for this command did not stop it when its lease ended "+
					"(stopped or hung?); the lock may be another holder's now: SIGTERM to the command's process group now, SIGKILL in %v\n", w.parent, w.grace)
				w.ch.terminate()
				w.killT.Reset(w.grace)
			}
		case <-w.killC:
			w.killC = nil
			if w.ch.groupAlive() {
				fmt.Fprintf(os.Stderr, "distlock: the command still runs %v after its lease's end and SIGTERM: SIGKILL to its process group\n", w.grace)
				w.ch.kill()
			}
		}
	}
}

// drain acts on the words already sent, and reports whether the watch is
// over.
func (w *guardWatch) drain(words <-chan string) (over bool) {
	for {
		select {
		case word, ok := <-words:
			if w.heard(word, ok) {
				return true
			}
		default:
			return false
		}
	}
}

// heard acts on one word of distlock's (ok false: end of file), and
// reports whether the watch is over.
func (w *guardWatch) heard(word string, ok bool) (over bool) {
	switch {
	case !ok:
		w.gone()
		return true
	case word == ".":
		return true
	case word == "t":
		w.termed = true
	default:
		if left, allowance, ok := parseTold(word); ok {
			w.deadline(left, allowance)
		}
	}
	return false
}

// deadline arms the guard's SIGTERM at the lease's deadline, left from
// now, plus the allowance, and its SIGKILL grace after that.
func (w *guardWatch) deadline(left, allowance time.Duration) {
	w.stopTimers()
	w.term = time.NewTimer(left + allowance)
	w.killT = time.NewTimer(left + allowance + w.grace)
	w.termC, w.killC = w.term.C, w.killT.C
}

func (w *guardWatch) stopTimers() {
	if w.term != nil {
		w.term.Stop()
		w.killT.Stop()
	}
}

// gone stops the group of a distlock that died without doing so.
func (w *guardWatch) gone() {
	ch := w.ch
	if !ch.groupAlive() {
		return
	}
	fmt.Fprintf(os.Stderr, "distlock: the distlock process (pid %d) that held the lock for this command is gone (killed?); "+
		"its lock is not renewed any more: SIGTERM to the command's process group now, SIGKILL in %v\n", w.parent, w.grace)
	ch.terminate()
	deadline := time.Now().Add(w.grace)
	for ch.groupAlive() && time.Now().Before(deadline) {
		time.Sleep(groupPoll)
	}
	if ch.groupAlive() {
		ch.kill()
	}
}

// parseTold reads tell's line "d<left ns> <allowance ns>".
func parseTold(word string) (left, allowance time.Duration, ok bool) {
	a, b, found := strings.Cut(strings.TrimPrefix(word, "d"), " ")
	l, err1 := strconv.ParseInt(a, 10, 64)
	al, err2 := strconv.ParseInt(b, 10, 64)
	if !found || !strings.HasPrefix(word, "d") || err1 != nil || err2 != nil || al < 0 {
		return 0, 0, false
	}
	return time.Duration(l), time.Duration(al), true
}
