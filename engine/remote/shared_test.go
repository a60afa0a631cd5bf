package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server"
)

// TestSharedErrors: the server's refusals of shared-lock requests come back
// as the engine's own errors: an upgrade as engine.ErrUpgrade, another kind
// or limit as an *engine.ArgumentError, and a server whose engine keeps no
// shared locks as errors.ErrUnsupported (a *distlock.UnsupportedError from
// a Client).
func TestSharedErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	e := newRemote(t, url)
	read := engine.AcquireRequest{Name: "rw", Owner: "me", Attempt: "1", TTL: 10 * time.Second, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}
	if g, err := e.Acquire(ctx, read); err != nil || !g.Acquired {
		t.Fatalf("read: %+v, %v", g, err)
	}
	write := read
	write.Attempt, write.Weight = "2", engine.RWPermits
	if _, err := e.Acquire(ctx, write); !errors.Is(err, engine.ErrUpgrade) {
		t.Fatalf("upgrade: %v, want engine.ErrUpgrade", err)
	}
	sem := engine.AcquireRequest{Name: "rw", Owner: "x", Attempt: "3", TTL: 10 * time.Second, Kind: engine.Semaphore, Limit: 2, Weight: 1}
	var ae *engine.ArgumentError
	if _, err := e.Acquire(ctx, sem); !errors.As(err, &ae) || ae.Arg != "name" || !strings.Contains(ae.Reason, "rwlock") {
		t.Fatalf("a semaphore on an rwlock: %v, want an *engine.ArgumentError", err)
	}
	high := uint64(time.Now().Add(24 * time.Hour).UnixMicro()) // within engine.MaxRaiseAhead
	if ok, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: "rw", Owner: "me", Token: high, Kind: engine.RWLock}); !ok || err != nil {
		t.Fatalf("RaiseFence (shared): %v, %v", ok, err)
	}
	if ok, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: "rw", Owner: "nobody", Token: high + 1, Kind: engine.RWLock}); ok || err != nil {
		t.Fatalf("RaiseFence (shared) of a non-holder: %v, %v", ok, err)
	}
	info, err := e.Inspect(ctx, "rw")
	if err != nil || info.Token != high || info.HighWater != high {
		t.Fatalf("after RaiseFence (shared): %+v, %v", info, err)
	}
	if err != nil || info.Kind != engine.RWLock || len(info.Holders) != 1 || info.Holders[0].Owner != "me" || info.Holders[0].Weight != 1 {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if mi := info.MutexView(); mi.Held || mi.Kind != 0 || mi.HighWater != info.Token {
		t.Fatalf("the mutex of an rwlock's name: %+v", mi)
	}
	if prev, err := e.SetLimit(ctx, "s", 4); err != nil || prev != 0 {
		t.Fatalf("SetLimit: %d, %v", prev, err)
	}
	if prev, err := e.SetLimit(ctx, "s", 2); err != nil || prev != 4 {
		t.Fatalf("SetLimit again: %d, %v", prev, err)
	}
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: "rw", Owner: "me", Kind: engine.RWLock}); err != nil || res.Status != engine.Released {
		t.Fatalf("ReleaseShared: %+v, %v", res, err)
	}
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: "rw", Owner: "me", Kind: engine.RWLock}); err != nil || res.Status != engine.NotHeld {
		t.Fatalf("ReleaseShared again: %+v, %v", res, err)
	}

	plainMem := memory.New()
	t.Cleanup(func() { _ = plainMem.Close() })
	_, purl := startServer(t, struct{ engine.Engine }{plainMem}, server.WithLogger(quietLogger()))
	p := newRemote(t, purl)
	if _, err := p.Acquire(ctx, sem); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Acquire (shared) on a server without shared locks: %v", err)
	}
	if _, err := p.SetLimit(ctx, "s", 2); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("SetLimit on a server without shared locks: %v", err)
	}
	c := distlock.New(p)
	defer c.Close()
	var ue *distlock.UnsupportedError
	if err := c.Semaphore("s", 2).SetLimit(ctx, 3); !errors.As(err, &ue) && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Client SetLimit: %v", err)
	}
}
