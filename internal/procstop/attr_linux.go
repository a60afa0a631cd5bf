package procstop

import "syscall"

// Attr is how a harness starts a server: in its own process group (a
// terminal's SIGINT aimed at the test binary does not reach it), and killed
// by the kernel when the test binary dies, so a binary that panics or is
// killed by go test's timeout leaves no server behind (its cleanups never
// run).
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
