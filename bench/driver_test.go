package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// stuckLocker grants at once; once measuring is set (the driver's
// beforeMeasure, between its warm-up and its measured window), it grants
// once more and then waits for ctx: the window counts one operation, then
// hangs, however late a busy machine schedules the workers.
type stuckLocker struct {
	measuring, counted atomic.Bool
}

func (s *stuckLocker) Acquire(ctx context.Context, _ string) (peers.Held, error) {
	if s.measuring.Load() && s.counted.Swap(true) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s, nil
}

func (s *stuckLocker) Release(context.Context) error { return nil }
func (s *stuckLocker) Close() error                  { return nil }

func TestRunOpsHang(t *testing.T) {
	lk := &stuckLocker{}
	const duration = 10 * time.Second
	start := time.Now()
	res := runOps(context.Background(), lk, nil, opsConfig{
		workers: 2, warmup: 20 * time.Millisecond, duration: duration,
		hangLimit: 100 * time.Millisecond, name: func(int) string { return "x" },
		beforeMeasure: func() error { lk.measuring.Store(true); return nil },
	})
	if !res.hung {
		t.Fatal("not reported as hung")
	}
	if !res.drain(time.Second) {
		t.Fatal("workers did not return after their context was cancelled")
	}
	res.collect()
	// The hang ended the window, not its duration.
	if res.ops == 0 || time.Since(start) >= duration {
		t.Fatalf("ops=%d after %v", res.ops, time.Since(start))
	}
}

func TestRunOpsCounts(t *testing.T) {
	lk := &stuckLocker{} // never measuring: never stuck
	res := runOps(context.Background(), lk, nil, opsConfig{
		workers: 3, duration: 50 * time.Millisecond, hangLimit: time.Second,
		name: func(int) string { return "x" },
	})
	if res.hung || res.ops == 0 || int64(len(res.lat)) != res.ops || res.errs != 0 {
		t.Fatalf("hung=%v ops=%d samples=%d errs=%d", res.hung, res.ops, len(res.lat), res.errs)
	}
}
