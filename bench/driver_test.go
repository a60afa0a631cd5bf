package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// stuckLocker grants at once until stuckAfter, then waits for ctx; but it
// grants at least once after countFrom (the end of the driver's warm-up),
// so that the run counts an operation however late a busy machine
// schedules the workers.
type stuckLocker struct {
	stuckAfter, countFrom time.Time
	counted               atomic.Bool
}

func (s *stuckLocker) Acquire(ctx context.Context, _ string) (peers.Held, error) {
	now := time.Now()
	if now.After(s.stuckAfter) && s.counted.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if now.After(s.countFrom) {
		s.counted.Store(true)
	}
	return s, nil
}

func (s *stuckLocker) Release(context.Context) error { return nil }
func (s *stuckLocker) Close() error                  { return nil }

func TestRunOpsHang(t *testing.T) {
	lk := &stuckLocker{stuckAfter: time.Now().Add(100 * time.Millisecond), countFrom: time.Now().Add(50 * time.Millisecond)}
	start := time.Now()
	res := runOps(context.Background(), lk, nil, opsConfig{
		workers: 2, warmup: 20 * time.Millisecond, duration: 10 * time.Second,
		hangLimit: 100 * time.Millisecond, name: func(int) string { return "x" },
	})
	if !res.hung {
		t.Fatal("not reported as hung")
	}
	if !res.drain(time.Second) {
		t.Fatal("workers did not return after their context was cancelled")
	}
	res.collect()
	if res.ops == 0 || time.Since(start) > 2*time.Second {
		t.Fatalf("ops=%d after %v", res.ops, time.Since(start))
	}
}

func TestRunOpsCounts(t *testing.T) {
	lk := &stuckLocker{stuckAfter: time.Now().Add(time.Hour)}
	res := runOps(context.Background(), lk, nil, opsConfig{
		workers: 3, duration: 50 * time.Millisecond, hangLimit: time.Second,
		name: func(int) string { return "x" },
	})
	if res.hung || res.ops == 0 || int64(len(res.lat)) != res.ops || res.errs != 0 {
		t.Fatalf("hung=%v ops=%d samples=%d errs=%d", res.hung, res.ops, len(res.lat), res.errs)
	}
}
