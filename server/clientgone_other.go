//go:build !unix

package server

import "net"

// peerClosed cannot tell here: only the request's context says the client
// has gone.
func peerClosed(net.Conn) bool { return false }
