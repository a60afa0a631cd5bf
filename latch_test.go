package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// A countdown latch lets a coordinator wait until N workers, in any
// processes, have done their part.
func ExampleCountDownLatch() {
	ctx := context.Background()
	c := distlock.New(memory.New()) // or a Redis engine: the same across processes
	defer c.Close()
	ready := c.CountDownLatch("shards-loaded")
	if _, err := ready.TrySetCount(ctx, 3); err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		go func() { _ = ready.CountDown(ctx) }() // each worker, when its shard is loaded
	}
	if err := ready.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	n, _ := ready.Count(ctx)
	fmt.Println("all shards loaded; count:", n)
	// Output: all shards loaded; count: 0
}

// latchEngines are the engines that keep latches, each made for t.
func latchEngines(t *testing.T) map[string]func() engine.Engine {
	srv := redistest.Start(t)
	return map[string]func() engine.Engine{
		"memory": func() engine.Engine { return memory.New() },
		"redis": func() engine.Engine {
			e, err := redisengine.New(srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
	}
}

// TestLatch: on every engine that keeps latches, waiters of another
// Client return only once the count is zero, and then all of them;
// TrySetCount sets only a latch at zero; CountDown at zero does nothing; a
// resent CountDown (same id) counts once; bad input and a context's end
// are typed errors.
func TestLatch(t *testing.T) {
	for kind, newEngine := range latchEngines(t) {
		t.Run(kind, func(t *testing.T) {
			eng := newEngine()
			a := distlock.New(eng)
			defer a.Close()
			b := distlock.New(eng)
			defer b.Close()
			ctx := context.Background()
			l := a.CountDownLatch("batch")
			var ae *distlock.ArgumentError
			if _, err := l.TrySetCount(ctx, 0); !errors.As(err, &ae) {
				t.Fatalf("TrySetCount(0): %v, want an *ArgumentError", err)
			}
			if err := l.Wait(ctx); err != nil {
				t.Fatalf("Wait on a latch never set: %v, want nil at once", err)
			}
			if set, err := l.TrySetCount(ctx, 3); !set || err != nil {
				t.Fatal(set, err)
			}
			if set, err := l.TrySetCount(ctx, 5); set || err != nil {
				t.Fatalf("TrySetCount on a counting latch: %v %v, want false", set, err)
			}
			waited := make(chan error, 2)
			for range 2 {
				go func() {
					err := b.CountDownLatch("batch").Wait(ctx)
					if n, cerr := b.CountDownLatch("batch").Count(ctx); err == nil && (n != 0 || cerr != nil) {
						err = fmt.Errorf("Wait returned with the count at %d (%v)", n, cerr)
					}
					waited <- err
				}()
			}
			// A resent copy of one call counts once.
			lt := eng.(engine.Latcher)
			for range 2 {
				if n, err := lt.CountDown(ctx, "batch", "call-1"); n != 2 || err != nil {
					t.Fatalf("CountDown call-1: %d %v, want 2", n, err)
				}
			}
			if err := l.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := l.Count(ctx); n != 1 || err != nil {
				t.Fatalf("Count %d %v, want 1", n, err)
			}
			select {
			case err := <-waited:
				t.Fatalf("a waiter returned with the count at 1: %v", err)
			default:
			}
			if err := l.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := <-waited; err != nil {
					t.Fatal(err)
				}
			}
			if err := l.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := l.Count(ctx); n != 0 || err != nil {
				t.Fatalf("Count after a CountDown at zero: %d %v, want 0", n, err)
			}
			if set, err := l.TrySetCount(ctx, 1); !set || err != nil {
				t.Fatalf("TrySetCount after zero: %v %v, want set again", set, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			var we *distlock.WaitError
			if err := l.Wait(wctx); !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Wait past its context: %v, want a *WaitError for the deadline", err)
			}
		})
	}
}

// TestFakeClockLatchWakesAtOnce: a waiter is woken at the instant of the
// CountDown that brings the count to zero, however long it waited: by
// notification, not polling. (A Wait that polled every 100 ms returned
// later: seen to fail.) Close ends a Wait with ErrClosed.
func TestFakeClockLatchWakesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		l := c.CountDownLatch("go")
		if _, err := l.TrySetCount(ctx, 1); err != nil {
			t.Fatal(err)
		}
		woken := make(chan time.Time, 1)
		go func() {
			if err := l.Wait(ctx); err != nil {
				t.Error(err)
			}
			woken <- time.Now()
		}()
		time.Sleep(time.Hour + 37*time.Millisecond)
		at := time.Now()
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if got := <-woken; !got.Equal(at) {
			t.Fatalf("woken %v after the CountDown, want at once", got.Sub(at))
		}

		other := distlock.New(eng)
		if _, err := l.TrySetCount(ctx, 1); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() { ended <- other.CountDownLatch("go").Wait(ctx) }()
		synctest.Wait()
		_ = other.Close()
		if err := <-ended; !errors.Is(err, distlock.ErrClosed) {
			t.Fatalf("Wait at Close: %v, want ErrClosed", err)
		}
	})
}

// TestLatchUnsupported: on an engine without latches every call is an
// *UnsupportedError.
func TestLatchUnsupported(t *testing.T) {
	enginetest.LatchUnsupported(t, struct{ engine.Engine }{memory.New()})
}

// flakyLatches is the embedded engine whose latch reads fail while down
// says so: a transient failure (a connection cut), or a permanent one.
type flakyLatches struct {
	*memory.Engine
	down      func() error
	failedAny chan struct{}
}

func (f flakyLatches) Count(ctx context.Context, name string) (int64, error) {
	if err := f.down(); err != nil {
		select {
		case f.failedAny <- struct{}{}:
		default:
		}
		return 0, err
	}
	return f.Engine.Count(ctx, name)
}

// TestFakeClockLatchWaitRidesOutFailures: a Wait whose reads fail for a
// while (a connection cut and back) goes on once they answer, and returns
// when the count reaches zero; reads that keep failing end it after the
// Client's backend failure budget, with the last read's *BackendError
// saying for how long; a failure no retry mends ends it at once.
func TestFakeClockLatchWaitRidesOutFailures(t *testing.T) {
	cut := errors.New("connection closed")
	for _, tc := range []struct {
		name string
		// failing says whether reads fail, and with what, since the
		// first failure started at t0 (fake clock).
		failing func(since time.Duration) error
		want    func(error, time.Duration) string // "" when right
	}{
		{"cut and back", func(d time.Duration) error {
			if d < 3*time.Second {
				return cut
			}
			return nil
		}, func(err error, _ time.Duration) string {
			if err != nil {
				return fmt.Sprintf("Wait through a 3 s cut: %v, want nil once the count is zero", err)
			}
			return ""
		}},
		{"down for good", func(time.Duration) error { return cut }, func(err error, took time.Duration) string {
			var be *distlock.BackendError
			if !errors.As(err, &be) || be.Failing < 5*time.Second || took > 6*time.Second {
				return fmt.Sprintf("Wait on a dead backend: %v after %v, want a *BackendError failing for the 5 s budget", err, took)
			}
			return ""
		}},
		{"permanent", func(time.Duration) error { return &engine.ArgumentError{Reason: "refused for good"} }, func(err error, took time.Duration) string {
			if !errors.Is(err, distlock.ErrInvalidArgument) || took != 0 {
				return fmt.Sprintf("Wait on a permanent failure: %v after %v, want ErrInvalidArgument at once", err, took)
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				mem := memory.New()
				var t0 time.Time
				broken := false
				eng := flakyLatches{Engine: mem, failedAny: make(chan struct{}, 1), down: func() error {
					if !broken {
						return nil
					}
					return tc.failing(time.Since(t0))
				}}
				c := distlock.New(eng, distlock.WithBackendFailureBudget(5*time.Second))
				defer c.Close()
				l := c.CountDownLatch("go")
				if _, err := l.TrySetCount(ctx, 1); err != nil {
					t.Fatal(err)
				}
				ended := make(chan error, 1)
				t0, broken = time.Now(), true
				go func() { ended <- l.Wait(ctx) }()
				<-eng.failedAny
				if tc.name == "cut and back" {
					// Counted down while the reads fail: the wake-up's
					// read fails too; a later one, after the cut, sees 0.
					if _, err := mem.CountDown(ctx, "go", ""); err != nil {
						t.Fatal(err)
					}
				}
				err := <-ended
				if bad := tc.want(err, time.Since(t0)); bad != "" {
					t.Fatal(bad)
				}
			})
		})
	}
}
