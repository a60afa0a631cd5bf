package server

import (
	"context"
	"net"
	"net/http"
)

// A request whose client has given up before the server carries it out
// must not be carried out. A server process that was stopped (SIGSTOP, a
// VM pause) and continued finds the requests that arrived meanwhile
// waiting in its sockets, each followed by its client's close: the remote
// engine cut them at its server's share of the time and sent them on
// through another server, where they were answered and acted upon (an
// acquire granted and released since, a countdown counted). Carried out
// now, an acquire would be a grant nobody holds, keeping the lock from
// everyone until its ttl; a countdown would count a second time once
// another call came between (the engine remembers the last call id only);
// a force-release would free a holder granted since. So once the body is
// read, a request whose connection the client has closed (or whose context
// has ended) is refused and nothing is done.
//
// The same check follows a grant: a held-open acquire granted after its
// client closed the connection (the close in the socket before the
// request's context is cancelled: a continued server wakes with both) is
// released at once and answered to nobody (serveAcquire).
//
// What this cannot see: a request the server had already begun to carry
// out when it was stopped, and a client whose close has not reached the
// server (a TLS client's close_notify is data, a proxy keeps its
// connection), which then act as before.

// connKey is the context key of a request's connection (Serve's
// ConnContext).
type connKey struct{}

// withConn is Serve's http.Server.ConnContext: it records the connection.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// clientGone reports whether r's client has gone: its context ended, or
// it closed its side of the connection (a FIN or a reset waits in the
// socket, with no request data before it).
func clientGone(r *http.Request) bool {
	if r.Context().Err() != nil {
		return true
	}
	c, ok := r.Context().Value(connKey{}).(net.Conn)
	return ok && peerClosed(c)
}

// refuseGone reports whether r's client has gone (clientGone), counting
// the request in distlock_requests_dropped_total when it has: the caller
// then answers goneError and does nothing.
func (s *Server) refuseGone(r *http.Request) bool {
	if !clientGone(r) {
		return false
	}
	s.metrics.dropped.Inc()
	return true
}

// goneError is the answer to a request whose client has gone (read only
// by a client that closed its sending side alone).
func goneError() *apiError {
	return badRequest("connection", "the client closed its connection before the request was carried out: nothing was done")
}
