package main

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// stuckLocker grants at once until stuck is set, then waits for ctx.
type stuckLocker struct{ stuckAfter time.Time }

func (s *stuckLocker) Acquire(ctx context.Context, _ string) (peers.Held, error) {
	if time.Now().After(s.stuckAfter) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s, nil
}

func (s *stuckLocker) Release(context.Context) error { return nil }
func (s *stuckLocker) Close() error                  { return nil }

func TestRunOpsHang(t *testing.T) {
	lk := &stuckLocker{stuckAfter: time.Now().Add(100 * time.Millisecond)}
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
