package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestLatch runs the latch's cases (enginetest.RunLatch, as the embedded
// engine and Redis run them) on one member and on three, each Client on a
// session of its own; and a count below 1 given to the engine itself is
// an *engine.ArgumentError that creates nothing.
func TestLatch(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "1member", 3: "3members"}[n], func(t *testing.T) {
			enginetest.RunLatch(t, harness(t, n))
		})
	}
	t.Run("ConcurrentCountDowns", func(t *testing.T) {
		// Each of 8 CountDowns from two sessions at once counts once:
		// a write at a stale version is read again, not lost.
		h := harness(t, 3)
		es := []engine.Latcher{h.New(t).(engine.Latcher), h.New(t).(engine.Latcher)}
		ctx := context.Background()
		if set, err := es[0].SetCount(ctx, "concurrent", 8); !set || err != nil {
			t.Fatal(set, err)
		}
		var wg sync.WaitGroup
		zeros := make(chan int64, 8)
		for i := range 8 {
			wg.Go(func() {
				n, err := es[i%2].CountDown(ctx, "concurrent", fmt.Sprint("call-", i))
				if err != nil {
					t.Error(err)
				}
				zeros <- n
			})
		}
		wg.Wait()
		close(zeros)
		seen := map[int64]bool{}
		for n := range zeros {
			if seen[n] {
				t.Errorf("two CountDowns left the count at %d", n)
			}
			seen[n] = true
		}
		if n, err := es[1].Count(ctx, "concurrent"); n != 0 || err != nil || !seen[0] {
			t.Fatalf("count %d (%v) after 8 CountDowns of 8, want 0 reached once", n, err)
		}
	})
	t.Run("BadCount", func(t *testing.T) {
		e := harness(t, 1).New(t)
		ctx := context.Background()
		lt := e.(engine.Latcher)
		for _, count := range []int64{0, -3} {
			set, err := lt.SetCount(ctx, "bad-count", count)
			var ae *engine.ArgumentError
			if set || !errors.As(err, &ae) {
				t.Fatalf("SetCount(%d): %v %v, want an *engine.ArgumentError", count, set, err)
			}
		}
		if n, err := lt.Count(ctx, "bad-count"); n != 0 || err != nil {
			t.Fatalf("Count after refused SetCounts: %d %v, want 0", n, err)
		}
	})
}
