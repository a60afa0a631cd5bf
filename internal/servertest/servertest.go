// Package servertest runs a distlock server (package server) on a free
// loopback port for the tests of the server and of engine/remote.
package servertest

import (
	"context"
	"errors"
	"net"
	"net/http"
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
