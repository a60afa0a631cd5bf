//go:build unix

package server

import (
	"net"
	"syscall"
)

// peerClosed reports whether the peer of c has closed its side: a peek
// without waiting finds the end of the stream (or a reset) and no data.
// It consumes nothing.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false // a TLS connection: its close_notify is data
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = err == nil && n == 0 || err == syscall.ECONNRESET
	})
	return closed
}
