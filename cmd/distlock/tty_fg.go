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
	return &foreground{fd: stdin, pgrp: int(pgrp)}
}

// restore makes distlock's process group the terminal's foreground group
// again. distlock is a background process at that moment, so SIGTTOU is
// ignored meanwhile.
func (f *foreground) restore() {
	wasIgnored := signal.Ignored(syscall.SIGTTOU)
	signal.Ignore(syscall.SIGTTOU)
	pgrp := int32(f.pgrp)
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(f.fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
	if !wasIgnored {
		signal.Reset(syscall.SIGTTOU)
	}
}
