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

// TestLatch runs the latch's cases (enginetest.Latch) on every engine
// here that keeps latches, both Clients on one engine.
func TestLatch(t *testing.T) {
	for kind, newEngine := range latchEngines(t) {
		t.Run(kind, func(t *testing.T) {
			eng := newEngine()
			enginetest.Latch(t, enginetest.Harness{New: func(*testing.T) engine.Engine { return eng }})
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
	c := distlock.New(struct{ engine.Engine }{memory.New()})
	defer c.Close()
	ctx := context.Background()
	l := c.CountDownLatch("x")
	_, err1 := l.TrySetCount(ctx, 1)
	_, err2 := l.Count(ctx)
	for _, err := range []error{err1, err2, l.CountDown(ctx), l.Wait(ctx)} {
		var ue *distlock.UnsupportedError
		if !errors.As(err, &ue) {
			t.Fatalf("%v, want an *UnsupportedError", err)
		}
	}
}
