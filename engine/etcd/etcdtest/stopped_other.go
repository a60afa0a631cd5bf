//go:build !linux

package etcdtest

// stopped cannot tell without /proc: Stop then returns once the signal is
// sent, and a member may answer a request or two after it.
func stopped(pid int) (ok bool, running string, err error) { return true, "", nil }
