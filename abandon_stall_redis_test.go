package distlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestStrangerAbandonedOnStalledRedis: a call given up while redis-server
// is stopped (SIGSTOP) for longer than the call's deadline plus twice the
// release timeout leaves nothing held once the server runs again, long
// before the grant's ttl: the acquire and its undo both sat in the stopped
// server's buffers and ran in either order, and the Client retried the
// undo and confirmed its "not held". Before, the undo gave up after one
// try, and the lock stayed held by nobody for its ttl in 7 of 12 runs of
// a tester's probe (a mutex, a semaphore, a set).
func TestStrangerAbandonedOnStalledRedis(t *testing.T) {
	const releaseTimeout = 500 * time.Millisecond
	for _, kind := range []string{"mutex", "semaphore", "set"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			client := func() (*distlock.Client, *undoCounter) {
				e, err := redisengine.New(srv.Client())
				if err != nil {
					t.Fatal(err)
				}
				u := &undoCounter{Engine: e}
				c := distlock.New(u, distlock.WithReleaseTimeout(releaseTimeout))
				t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
				return c, u
			}
			giver, undos := client()
			observer, _ := client()
			ctx := context.Background()
			// Warm: the scripts loaded, the connections made.
			if l, err := giver.TryAcquire(ctx, "warm"); err != nil {
				t.Fatal(err)
			} else if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := observer.Inspect(ctx, "ghost"); err != nil {
				t.Fatal(err)
			}
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			const callTimeout = 300 * time.Millisecond
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			var err error
			ttl := distlock.WithTTL(10 * time.Minute) // its expiry cannot free the name here
			switch kind {
			case "semaphore":
				_, err = giver.Semaphore("ghost", 1).TryAcquire(cctx, ttl)
			case "set":
				_, err = giver.TryAcquireAll(cctx, []string{"ghost", "ghost-2"}, ttl)
			default:
				_, err = giver.TryAcquire(cctx, "ghost", ttl)
			}
			cancel()
			if err == nil {
				t.Fatal("granted by a stopped server")
			}
			// Stopped until the first undo failed (after the request's
			// flight): where the Client used to give up.
			for start := time.Now(); undos.failed.Load() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Since(start) > time.Minute {
					t.Fatal("no undo failed within a minute of the stall")
				}
			}
			if err := srv.Resume(); err != nil {
				t.Fatal(err)
			}
			resumed := time.Now()
			for {
				info, err := observer.Inspect(ctx, "ghost")
				if err == nil && !info.Held {
					return
				}
				if time.Since(resumed) > time.Minute {
					t.Fatalf("a minute after the server ran again the name is still held (%+v, %v): the abandoned grant was not undone", info, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// undoCounter is a Redis engine (every optional interface of it kept) that
// counts the releases that failed: the undos a stall timed out.
type undoCounter struct {
	*redisengine.Engine
	failed atomic.Int32
}

func (u *undoCounter) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	res, err := u.Engine.Release(ctx, r)
	if err != nil {
		u.failed.Add(1)
	}
	return res, err
}
