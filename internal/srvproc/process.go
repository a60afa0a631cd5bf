package srvproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/procstop"
)

// killWait bounds Kill's wait for the process to exit after SIGKILL (a
// sanity bound: a process the kernel cannot reap is nothing a test mends).
const killWait = 10 * time.Second

// Process is one running server process. A goroutine waits on the command
// and closes done once the process has exited and been reaped; that
// goroutine never outlives the process.
type Process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
	err  error // exit status; valid once done is closed
}

// Start launches bin with args as procstop.Attr says (its own process
// group, killed with the test binary), with stdout and stderr appended to
// the file at logPath.
func Start(bin string, args []string, logPath string) (*Process, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", logPath, err)
	}
	// Using an *os.File (not a pipe) means no copy goroutine and no chance
	// of Wait blocking on a forked child that inherited the descriptor;
	// the process has its own copy of it once started.
	defer out.Close()

	cmd := exec.Command(bin, args...)
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = procstop.Attr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.pid }

// Exited reports whether the process has exited and been reaped.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to d for the process to exit and reports whether it did.
func (p *Process) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// Signal sends sig to the process. Signals to an exited process are
// ignored.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to pid %d: %w", sig, p.pid, err)
	}
	return nil
}

// Pause stops the process with SIGSTOP and returns once every thread of it
// is stopped (procstop.Wait), or an error after timeout.
func (p *Process) Pause(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	return procstop.Wait(p.pid, timeout)
}

// Kill sends SIGCONT (in case the process is stopped) and SIGKILL to the
// whole process group, which also takes out any child the server forked,
// then waits for the process to exit.
func (p *Process) Kill() error {
	if !p.Exited() {
		_ = syscall.Kill(-p.pid, syscall.SIGCONT)
		if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			// Fall back to the leader alone.
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill pid %d: %w", p.pid, err)
			}
		}
	}
	if !p.Wait(killWait) {
		return fmt.Errorf("pid %d did not exit %v after SIGKILL", p.pid, killWait)
	}
	return nil
}

// Term sends SIGTERM (after SIGCONT, in case the process is stopped) and
// waits up to grace for a clean exit, then falls back to Kill.
func (p *Process) Term(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = syscall.Kill(p.pid, syscall.SIGCONT)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.Wait(grace) {
		return nil
	}
	return p.Kill()
}
