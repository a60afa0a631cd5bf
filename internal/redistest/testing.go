package redistest

import (
	"sync"
	"testing"
)

// Start starts a redis-server on a free loopback port (127.0.0.1) in a fresh
// temporary directory and waits until it answers PING. It fails the test with
// t.Fatalf (never t.Skip) if redis-server is not installed, with a message
// saying how to install it. The server is killed and its directory removed by
// a t.Cleanup registered here.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	if _, err := RequireRedisServer(); err != nil {
		t.Fatalf("%v", err)
	}
	s, err := New(opts...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { closeIn(t, s) })
	return s
}

// StartN starts n independent redis-server nodes concurrently, each as by
// Start, and returns them in a slice of length n. If any fails to start, the
// ones that did are cleaned up and the test fails.
func StartN(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	if _, err := RequireRedisServer(); err != nil {
		t.Fatalf("%v", err)
	}
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = New(opts...) })
	}
	wg.Wait()

	var failed []error
	for i, s := range servers {
		if s != nil {
			t.Cleanup(func() { closeIn(t, s) })
		}
		if errs[i] != nil {
			failed = append(failed, errs[i])
		}
	}
	if len(failed) > 0 {
		t.Fatalf("redistest: %d of %d servers failed to start; first error: %v", len(failed), n, failed[0])
	}
	return servers
}

// closeIn closes s, reporting a failure to t.
func closeIn(t testing.TB, s *Server) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Errorf("redistest: close %s: %v", s.Addr(), err)
	}
}
