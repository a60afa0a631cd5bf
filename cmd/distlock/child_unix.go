//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// forwardedSignals are the signals distlock run passes on to the command's
// process group; while it waits for the lock, they end the wait.
func forwardedSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
}

// relayedSignals are the signals distlock run passes on to the command's
// process group while the command runs (a reload asked with SIGUSR1, say),
// and otherwise ignores: they end nothing.
func relayedSignals() []os.Signal {
	return []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2}
}

// child is the command that distlock run supervises: the leader of its own
// process group.
type child struct {
	cmd   *exec.Cmd
	pgid  int
	tty   *foreground    // nil unless the group was put in the terminal's foreground
	relay chan os.Signal // relayedSignals received since just before the start
	guard *guard         // stops the group if distlock dies or stalls (startGuarded)
	// teller tells guard the lease's deadlines (armed with the first in
	// startGuarded, updated by supervise).
	teller *deadlineTeller
}

// startChild starts argv in a new process group (so that the whole group
// can be signalled, grandchildren included) with the standard streams
// passed through and env as its environment. When distlock runs in the
// foreground of a terminal, the group is made the foreground group, so that
// the command can read the terminal and gets its Ctrl-C.
func startChild(argv []string, env []string) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fg := foregroundTerminal()
	if fg != nil {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = fg.fd
	}
	// Listened for before the start: a signal sent once the command runs
	// (even before supervise is there) is passed on, none is lost.
	relay := make(chan os.Signal, 8)
	signal.Notify(relay, relayedSignals()...)
	if err := cmd.Start(); err != nil {
		signal.Stop(relay)
		if fg != nil {
			fg.restore() // the child may have taken the terminal before its exec failed
		}
		return nil, err
	}
	c := &child{cmd: cmd, pgid: cmd.Process.Pid, relay: relay}
	if fg != nil {
		fg.handedOver()
		c.tty = fg
	}
	return c, nil
}

// relayed is the channel of the relayedSignals received since the command
// started, for supervise to pass on; stopRelay stops listening.
func (c *child) relayed() <-chan os.Signal { return c.relay }

// stopRelay stops listening for the relayedSignals.
func (c *child) stopRelay() { signal.Stop(c.relay) }

// signal sends sig to the whole process group (nothing when it is gone).
func (c *child) signal(sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(-c.pgid, s)
	}
}

// terminate sends SIGTERM to the process group.
func (c *child) terminate() { c.signal(syscall.SIGTERM) }

// kill sends SIGKILL to the process group.
func (c *child) kill() { c.signal(syscall.SIGKILL) }

// groupAlive reports whether any process of the group still runs.
func (c *child) groupAlive() bool {
	if err := syscall.Kill(-c.pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return groupHasLiveMember(c.pgid)
}

// restoreTerminal gives the terminal back to distlock's process group.
func (c *child) restoreTerminal() {
	if c.tty != nil {
		c.tty.restore()
		c.tty = nil
	}
}

// wait waits for the command (the group leader) to exit and returns its
// exit status.
func (c *child) wait() int {
	_ = c.cmd.Wait() // a non-zero status is an error; ProcessState has it all
	return exitStatus(c.cmd.ProcessState)
}

// exitStatus is the exit code of a command that ended: its own code, or
// 128 plus the number of the signal that killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalNumber is the number of a signal, for exit codes.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}

// startErrorCode is the exit code for a command that could not be started:
// 127 when it was not found, 126 otherwise (as shells do).
func startErrorCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return exitNoCmd
	}
	return exitNoExec
}
