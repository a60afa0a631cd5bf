package postgres

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// closeWait bounds each of Close's two waits: first for the engine's
// connections to close on their own (a Terminate sent, pgx's cleanup of a
// connection whose call was cancelled, which waits up to 15 s for a
// server that does not answer its cancel request), then, once Close has
// closed the sockets it knows, for the pool to finish closing.
const closeWait = time.Second

// sockets are the network connections the engine made itself: its pool's
// when it opened the pool (a URL, Open), and its listening connection's
// made WithListenConfig, cancel requests included. Close closes those
// still open when they do not close within closeWait, so a server that
// stopped answering (a SIGSTOPped postmaster, a partition) holds no
// goroutine or socket past Close.
type sockets struct {
	mu     sync.Mutex
	open   map[*socket]struct{}
	closed bool
}

// socket is a connection sockets keeps until it is closed.
type socket struct {
	net.Conn
	s *sockets
}

// Close closes the connection and forgets it.
func (c *socket) Close() error {
	c.s.mu.Lock()
	delete(c.s.open, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// dialer returns dial, its connections kept by s (nil: nil).
func (s *sockets) dialer(dial pgconn.DialFunc) pgconn.DialFunc {
	if dial == nil {
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return s.add(c)
	}
}

// add keeps c, or closes it when s is closed.
func (s *sockets) add(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	if s.open == nil {
		s.open = make(map[*socket]struct{})
	}
	sc := &socket{Conn: c, s: s}
	s.open[sc] = struct{}{}
	return sc, nil
}

// closeAll closes every connection kept, and every one made from now.
func (s *sockets) closeAll() {
	s.mu.Lock()
	s.closed = true
	open := s.open
	s.open = nil
	s.mu.Unlock()
	for c := range open {
		_ = c.Conn.Close()
	}
}

// closeBounded runs stop (closing the listener and the pool) and returns
// when it returns or, at the latest, after closeWait twice: when stop
// returns, or once closeWait passed, it closes the sockets the engine made
// still open (e.socks: pgx's cleanup of a cancelled call's connection,
// its cancel request, or a connection stop is waiting for), which ends
// every wait on them, and then waits closeWait more for stop. Only a pool
// the engine did not make (WithOwnedPool) can still be closing then, in a
// goroutine of its own, until pgx's 15 s bound on a connection's cleanup.
func (e *Engine) closeBounded(stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop()
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		t.Reset(closeWait)
	}
	e.socks.closeAll()
	select {
	case <-done:
	case <-t.C:
	}
}
