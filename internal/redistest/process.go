package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/procstop"
)

// process is one running redis-server. A goroutine waits on the command and
// closes done once the process has exited and been reaped; that goroutine
// never outlives the process.
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
	err  error // exit status; valid once done is closed
}

// startProcess launches bin with args as procstop.Attr says (its own
// process group, killed with the test binary), with stdout and stderr
// appended to outPath.
func startProcess(bin string, args []string, outPath string) (*process, error) {
	out, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("redistest: open %s: %w", outPath, err)
	}
	// Using an *os.File (not a pipe) means no copy goroutine and no chance
	// of Wait blocking on a forked child that inherited the descriptor.
	defer out.Close()

	cmd := exec.Command(bin, args...)
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = procstop.Attr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redistest: start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited and been reaped.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to exit and reports whether it did.
func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// signal sends sig to the process. Signals to an exited process are ignored.
func (p *process) signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("redistest: signal %v to pid %d: %w", sig, p.pid, err)
	}
	return nil
}

// kill sends SIGCONT (in case the process is stopped) and SIGKILL to the
// whole process group, which also takes out any forked persistence child,
// then waits for the process to exit.
func (p *process) kill() error {
	if !p.exited() {
		_ = syscall.Kill(-p.pid, syscall.SIGCONT)
		if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			// Fall back to the leader alone.
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("redistest: kill pid %d: %w", p.pid, err)
			}
		}
	}
	if !p.wait(killWait) {
		return fmt.Errorf("redistest: pid %d did not exit %v after SIGKILL", p.pid, killWait)
	}
	return nil
}

// stop sends SIGTERM (after SIGCONT, in case the process is stopped) and waits
// up to stopWait for a clean exit, then falls back to kill.
func (p *process) stop() error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(p.pid, syscall.SIGCONT)
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.wait(stopWait) {
		return nil
	}
	return p.kill()
}
