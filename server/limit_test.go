package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server"
	"github.com/distlock/distlock/server/api"
)

// TestSemaphoreLimitNotSupported: a server on a quorum, which cannot keep
// a semaphore's limit above 1, answers not_supported (HTTP 501) for POST
// /v1/locks/{name}/limit and for an acquire of such a semaphore, waiting
// or not, never backend_unavailable (which says: retry); a Client through
// the server gets an *UnsupportedError, and nothing changed.
func TestSemaphoreLimitNotSupported(t *testing.T) {
	var nodes []engine.Engine
	for range 3 {
		m := memory.New()
		t.Cleanup(func() { _ = m.Close() })
		nodes = append(nodes, m)
	}
	q, err := quorum.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	s := start(t, q)
	want(t, "limit 2", call(t, "POST", lockURL(s, "sem", "limit"), "", map[string]any{"limit": 2}), 501, api.CodeNotSupported)
	want(t, "acquire with limit 2", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"kind": "semaphore", "limit": 2}), 501, api.CodeNotSupported)
	want(t, "acquire with limit 2, waiting", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"kind": "semaphore", "limit": 2, "wait_ms": server.DefaultMaxWait.Milliseconds()}), 501, api.CodeNotSupported)

	eng, err := remote.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ue *distlock.UnsupportedError
	if err := c.Semaphore("sem", 1).SetLimit(ctx, 2); !errors.As(err, &ue) {
		t.Fatalf("SetLimit 2 through the server: %v (%T), want an *UnsupportedError", err, err)
	}
	if _, err := c.Semaphore("sem", 2).Acquire(ctx); !errors.As(err, &ue) {
		t.Fatalf("Acquire with limit 2 through the server: %v (%T), want an *UnsupportedError", err, err)
	}
	for i, n := range nodes {
		if info, _ := n.Inspect(ctx, "sem"); info.Kind != 0 {
			t.Fatalf("node %d keeps a semaphore after the refusals: %+v", i, info)
		}
	}
}
