//go:build !linux

package procstop

// Stopped cannot tell without /proc: Wait then returns once the signal is
// sent, and a process may answer a request or two after it.
func Stopped(pid int) (ok bool, running string, err error) { return true, "", nil }
