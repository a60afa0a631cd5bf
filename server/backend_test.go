package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server"
)

// TestInfoBackend: GET /v1/info tells a client what lock state the server
// answers for. An embedded server says it is embedded, with a backend of
// its own process (two never match); a server on Redis reports the backend
// id its operator declared (WithBackendID), or none. WithBackendID on the
// embedded engine, or an empty or reserved id, is refused with a
// *distlock.ArgumentError.
func TestInfoBackend(t *testing.T) {
	info := func(s *testServer) map[string]any {
		r := call(t, "GET", s.url+"/v1/info", "", nil)
		want(t, "info", r, 200, "")
		return r.json(t)
	}
	a, b := info(start(t, nil)), info(start(t, nil))
	if a["embedded"] != true || !strings.HasPrefix(a["backend"].(string), "embedded:") || a["backend"] == b["backend"] {
		t.Fatalf("two embedded servers report %v and %v", a, b)
	}

	rs := redistest.Start(t)
	eng, err := redisengine.New(rs.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	if m := info(start(t, eng)); m["embedded"] != nil || m["backend"] != nil {
		t.Fatalf("a server on Redis without a backend id reports %v", m)
	}
	if m := info(start(t, eng, server.WithBackendID("redis-prod"))); m["backend"] != "redis-prod" {
		t.Fatalf("a server on Redis with a backend id reports %v", m)
	}

	var ae *distlock.ArgumentError
	for _, bad := range []string{"", "embedded:x", strings.Repeat("x", 257)} {
		if _, err := server.New(eng, server.WithBackendID(bad)); !errors.As(err, &ae) {
			t.Errorf("WithBackendID(%.20q): %v, want an *ArgumentError", bad, err)
		}
	}
	mem := memory.New()
	defer mem.Close()
	if _, err := server.New(mem, server.WithBackendID("redis-prod")); !errors.As(err, &ae) {
		t.Fatalf("WithBackendID on the embedded engine: %v", err)
	}
}
