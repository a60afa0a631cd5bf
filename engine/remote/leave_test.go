package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server"
)

// TestSharedWaiterLeaves: a Client's waiter for a shared lock (a
// semaphore's permit, an RW lock's write side) that gives up leaves that
// lock's queue before its call returns, with the kind in its leave
// (engine.LeaveRequest.Kind; "shared": true on the wire): on the embedded
// engine, and through a server. The queue is empty at once, not after the
// waiter's heartbeat ttl, and once the holder releases, a newcomer is
// granted (a dead entry at the head would keep it for the queue).
func TestSharedWaiterLeaves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := memory.New()
	t.Cleanup(func() { _ = served.Close() })
	_, url := startServer(t, served, server.WithLogger(quietLogger()))
	embedded := memory.New()
	t.Cleanup(func() { _ = embedded.Close() })
	type take func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error)
	sem := func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
		return c.Semaphore("sem", 1).Acquire(ctx)
	}
	trySem := func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
		return c.Semaphore("sem", 1).TryAcquire(ctx)
	}
	read := func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
		return c.RWMutex("rw").RLock(ctx)
	}
	write := func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
		return c.RWMutex("rw").Lock(ctx)
	}
	tryWrite := func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
		return c.RWMutex("rw").TryLock(ctx)
	}
	for _, e := range []struct {
		name       string
		eng, state engine.Engine
	}{{"embedded", embedded, embedded}, {"remote", newRemote(t, url), served}} {
		for _, k := range []struct {
			name                 string
			lock                 string
			hold, wait, newcomer take
		}{{"semaphore", "sem", sem, sem, trySem}, {"rw writer", "rw", read, write, tryWrite}} {
			t.Run(e.name+"/"+k.name, func(t *testing.T) {
				holder, waiter := distlock.New(e.eng), distlock.New(e.eng)
				defer holder.Close()
				defer waiter.Close()
				l, err := k.hold(holder, ctx)
				if err != nil {
					t.Fatal(err)
				}
				wctx, giveUp := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() {
					_, err := k.wait(waiter, wctx)
					done <- err
				}()
				for waiters(t, e.state, k.lock) != 1 {
					if ctx.Err() != nil {
						t.Fatal("the waiter never queued")
					}
					time.Sleep(5 * time.Millisecond) // (waiting for the condition)
				}
				giveUp()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("the waiter that gave up: %v", err)
				}
				if n := waiters(t, e.state, k.lock); n != 0 {
					t.Fatalf("%d waiters queued after the waiter gave up, want 0", n)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				newcomer := distlock.New(e.eng)
				defer newcomer.Close()
				nl, err := k.newcomer(newcomer, ctx)
				if err != nil {
					t.Fatalf("a newcomer after the release: %v", err)
				}
				_ = nl.Release(ctx)
			})
		}
	}
}

// waiters is the number of waiters queued for name on eng.
func waiters(t *testing.T, eng engine.Engine, name string) int {
	t.Helper()
	info, err := eng.Inspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return info.Waiters
}
