//go:build linux || darwin || freebsd

package main

import (
	"os/signal"
	"syscall"
	"unsafe"
)

// foreground remembers the terminal whose foreground process group distlock
// handed to the command, to take it back afterwards.
type foreground struct {
	fd   int // the terminal: distlock's standard input
	pgrp int // distlock's own process group
	// ttouIgnored: SIGTTOU was ignored before distlock handed the
	// terminal to the command (as restore leaves it).
	ttouIgnored bool
}

// foregroundTerminal returns the terminal on standard input when distlock's
// process group is in its foreground, or nil (no terminal, or a background
// job).
func foregroundTerminal() *foreground {
	const stdin = 0
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, stdin, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return nil
	}
	if int(pgrp) != syscall.Getpgrp() {
		return nil
	}
	return &foreground{fd: stdin, pgrp: int(pgrp), ttouIgnored: signal.Ignored(syscall.SIGTTOU)}
}

// handedOver is called once the command's process group is the terminal's
// foreground: distlock is a background process of the terminal from then
// on, and ignores SIGTTOU until restore, so that what it writes there (why
// the lock was lost, before it stops the command) is written rather than
// stopping distlock: with "stty tostop" a background process that writes on
// its terminal is stopped by SIGTTOU unless it ignores it, and a stopped
// distlock would leave the command running without the lock. It is called
// after the command started, which therefore does not inherit the ignored
// SIGTTOU.
func (f *foreground) handedOver() { signal.Ignore(syscall.SIGTTOU) }

// restore makes distlock's process group the terminal's foreground group
// again. distlock is a background process at that moment, so SIGTTOU is
// ignored meanwhile; then its handling is what it was before handedOver.
func (f *foreground) restore() {
	signal.Ignore(syscall.SIGTTOU)
	pgrp := int32(f.pgrp)
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(f.fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
	if !f.ttouIgnored {
		signal.Reset(syscall.SIGTTOU)
	}
}
