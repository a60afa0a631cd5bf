//go:build unix && !linux

package procstop

import "syscall"

// Attr is how a harness starts a server: in its own process group (a
// terminal's SIGINT aimed at the test binary does not reach it). Only Linux
// can also have it killed when the test binary dies.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
