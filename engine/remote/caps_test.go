package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// wholeSeconds is an embedded engine that declares etcd's ttl bounds
// (whole seconds, at least 2 s), so that a server on it fits every ttl as
// a server on etcd does.
type wholeSeconds struct{ *memory.Engine }

func (w wholeSeconds) Capabilities() engine.Capabilities {
	c := w.Engine.Capabilities()
	c.MinTTL, c.TTLGranularity = 2*time.Second, time.Second
	return c
}

// TestServerTTLBounds: a Client on a server whose engine keeps only some
// ttls fits its ttls to them, as on that engine itself, once the Engine
// has read the server's info (Ping, or before its first request): the
// lease reports the ttl the backend keeps (2 s for 500 ms, 3 s for 2.5 s),
// and the server holds the lock for it. A server on an engine without
// bounds leaves the ttl asked for.
func TestServerTTLBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := newMemory(t)
	_, url := startServer(t, wholeSeconds{mem})

	pinged := newRemote(t, url)
	if caps := pinged.Capabilities(); caps.MinTTL != 0 || caps.TTLGranularity != 0 {
		t.Fatalf("before any contact the Engine declares %+v; want no ttl bounds (unknown)", caps)
	}
	if _, err := pinged.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if caps := pinged.Capabilities(); caps.MinTTL != 2*time.Second || caps.TTLGranularity != time.Second || !caps.Fair {
		t.Fatalf("after Ping the Engine declares %+v; want fair, MinTTL 2s, TTLGranularity 1s", caps)
	}
	c := distlock.New(pinged)
	defer c.Close()
	l, err := c.TryAcquire(ctx, "short", distlock.WithTTL(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.TTL() != 2*time.Second {
		t.Fatalf("a 500ms lease through the server reports ttl %v; want 2s, what the server's engine keeps", l.TTL())
	}
	if info, err := mem.Inspect(ctx, "short"); err != nil || info.TTL <= time.Second {
		t.Fatalf("the server's engine shows %+v, %v; want the lock held for about 2s", info, err)
	}

	// Never pinged: the Engine reads the info before its first request.
	fresh := newRemote(t, url)
	c2 := distlock.New(fresh)
	defer c2.Close()
	if _, err := c2.Inspect(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	l2, err := c2.TryAcquire(ctx, "other", distlock.WithTTL(2500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	if l2.TTL() != 3*time.Second {
		t.Fatalf("a 2.5s lease through the server reports ttl %v; want 3s", l2.TTL())
	}

	// A server on an engine without bounds: the ttl asked for.
	_, plainURL := startServer(t, newMemory(t))
	plain := newRemote(t, plainURL)
	if _, err := plain.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c3 := distlock.New(plain)
	defer c3.Close()
	l3, err := c3.TryAcquire(ctx, "short", distlock.WithTTL(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Release(ctx)
	if l3.TTL() != 500*time.Millisecond {
		t.Fatalf("a 500ms lease on a server without bounds reports ttl %v; want 500ms", l3.TTL())
	}
}
