// Package servertest runs a distlock server (package server) on a free
// loopback port for the tests of the server and of engine/remote.
package servertest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server"
)

// Start serves eng with opts until the test ends and returns the server and
// its base URL (https when the options configure TLS). When the test ends
// the server is shut down, and Serve must have returned
// http.ErrServerClosed; an error from that Shutdown is reported too when
// checkShutdown is set (tests that stop the server themselves clear it).
func Start(t testing.TB, eng engine.Engine, checkShutdown bool, opts ...server.Option) (*server.Server, string) {
	t.Helper()
	srv, err := server.New(eng, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && checkShutdown {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	scheme := "http://"
	if srv.TLS() {
		scheme = "https://"
	}
	return srv, scheme + ln.Addr().String()
}

// Killable serves eng with opts like Start, on a listener whose
// connections kill cuts at once, as when the server's process is killed:
// every connection is reset (no answer, no shutdown event reaches a
// client), the port is closed so new connections are refused, and then the
// server is closed. kill is safe to call more than once; the test's end
// calls it too.
func Killable(t testing.TB, eng engine.Engine, opts ...server.Option) (srv *server.Server, url string, kill func()) {
	t.Helper()
	srv, err := server.New(eng, opts...)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &killListener{Listener: inner, conns: map[net.Conn]bool{}}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	var once sync.Once
	kill = func() {
		once.Do(func() {
			ln.kill()
			_ = srv.Close()
			<-done // Serve ends with the listener: whatever it returns
		})
	}
	t.Cleanup(kill)
	return srv, "http://" + inner.Addr().String(), kill
}

// killListener tracks its connections, so that kill can reset them all.
type killListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]bool
	killed bool
}

func (l *killListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.conns[c] = true
	return c, nil
}

// kill closes the port and resets every connection.
func (l *killListener) kill() {
	l.mu.Lock()
	l.killed = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	_ = l.Listener.Close()
	for c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as the kernel sends for a killed process
		}
		_ = c.Close()
	}
}

// ClosedAddr returns a loopback address where nothing listens: a port that
// was free a moment ago (a server that is down).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
