package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/internal/redistest"
)

// Code written against x/sync's semaphore.Weighted runs on a distributed
// semaphore through Semaphore.Weighted.
func ExampleSemaphore_Weighted() {
	ctx := context.Background()
	c := distlock.New(memory.New()) // or a Redis engine: the same across processes
	defer c.Close()
	sem := c.Semaphore("encoders", 3).Weighted(distlock.WithTTL(10 * time.Second))

	var wg sync.WaitGroup
	for job := range 4 {
		if err := sem.Acquire(ctx, 1); err != nil {
			fmt.Println(err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sem.Release(1)
			_ = job // encode under the permit; stop when <-sem.Done()
		}()
	}
	wg.Wait()
	fmt.Println("held after the jobs:", sem.Held(), "ok to take all 3:", sem.TryAcquire(3))
	sem.Release(3)
	// Output:
	// held after the jobs: 0 ok to take all 3: true
}

// TestWeighted: permits are held per lease; Release counts permits off in
// grant order and gives a lease back only once all its permits were
// counted off (a partly released lease keeps its whole weight: seen to
// fail when it was given back at once); n = 0 takes nothing; bad input is
// refused and changes nothing; releasing more than held panics and changes
// nothing.
func TestWeighted(t *testing.T) {
	eng := memory.New()
	c, other := distlock.New(eng), distlock.New(eng)
	defer c.Close()
	defer other.Close()
	ctx := context.Background()
	w := c.Semaphore("pool", 3).Weighted()
	o := other.Semaphore("pool", 3).Weighted()
	if err := w.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if !w.TryAcquire(1) || w.TryAcquire(1) || o.TryAcquire(1) {
		t.Fatal("TryAcquire: want the third permit granted, then none")
	}
	w.Release(1) // counted off the 2-permit lease, which stays held
	if w.Held() != 2 || o.TryAcquire(1) {
		t.Fatalf("after Release(1): held %d, another view got a permit; want 2 held and none free in the semaphore", w.Held())
	}
	w.Release(1) // the 2-permit lease is counted off: given back
	if w.Held() != 1 || !o.TryAcquire(2) {
		t.Fatalf("after Release(2): held %d and the 2 permits not free; want 1 held, 2 free", w.Held())
	}
	o.Release(2)

	if err := w.Acquire(ctx, 0); err != nil || !w.TryAcquire(0) || w.Held() != 1 {
		t.Fatalf("n = 0: %v, held %d; want nil, nothing taken", err, w.Held())
	}
	var ae *distlock.ArgumentError
	for _, n := range []int64{-1, 4} {
		if err := w.Acquire(ctx, n); !errors.As(err, &ae) || w.TryAcquire(n) {
			t.Fatalf("n = %d: %v; want an *ArgumentError, and TryAcquire false", n, err)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Release(2) of 1 held did not panic")
			}
		}()
		w.Release(2)
	}()
	if held := w.Held(); held != 1 {
		t.Fatalf("after the panic: held %d, want 1", held)
	}
	w.Release(1)
	if info, err := c.Semaphore("pool", 3).Inspect(ctx); err != nil || len(info.Holders) != 0 {
		t.Fatalf("after every release: %+v %v, want no holder", info, err)
	}
}

// TestFakeClockWeightedLoss: when leases of a view are lost (a
// force-release, found at the next renewal), Done is closed and Err says
// so while a lost lease is counted; Release counts lost leases off first,
// and once none is left Err is nil and Done is a fresh channel.
func TestFakeClockWeightedLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c := distlock.New(eng)
		defer c.Close()
		ctx := context.Background()
		sem := c.Semaphore("lossy", 5)
		w := sem.Weighted(distlock.WithTTL(fakeTTL))
		if err := w.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.ForceRelease(ctx, "lossy"); err != nil {
			t.Fatal(err)
		}
		if err := w.Acquire(ctx, 1); err != nil { // granted after the force-release: kept
			t.Fatal(err)
		}
		select {
		case <-w.Done():
		case <-time.After(fakeTTL):
			t.Fatal("Done not closed after the loss")
		}
		if !errors.Is(w.Err(), distlock.ErrLeaseLost) {
			t.Fatalf("Err %v, want the loss", w.Err())
		}
		w.Release(1) // counted off the lost lease, which still has 1
		if w.Err() == nil {
			t.Fatal("Err nil while a lost lease is still counted")
		}
		w.Release(1)
		synctest.Wait()
		select {
		case <-w.Done():
			t.Fatal("Done closed after the lost permits were released")
		default:
		}
		if w.Err() != nil || w.Held() != 1 {
			t.Fatalf("Err %v, held %d; want nil and the kept lease's 1", w.Err(), w.Held())
		}
		if info, err := sem.Inspect(ctx); err != nil || len(info.Holders) != 1 || info.Holders[0].Weight != 1 {
			t.Fatalf("the semaphore: %+v %v, want the kept lease alone", info, err)
		}
		w.Release(1)
	})
}

// TestWeightedRedis: views of one semaphore on two Clients of a real
// Redis (as two processes), used by goroutines x/sync-style, never hold
// more permits together than the limit, and give every permit back. (With
// every lease taking weight 1 whatever n, the limit was exceeded: seen to
// fail.)
func TestWeightedRedis(t *testing.T) {
	srv := redistest.Start(t)
	const limit = 3
	views := []*distlock.Weighted{
		redisClient(t, srv).Semaphore("pool", limit).Weighted(),
		redisClient(t, srv).Semaphore("pool", limit).Weighted(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		w := views[g%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				n := int64(1 + (g+i)%2)
				if err := w.Acquire(ctx, n); err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					return
				}
				now := inUse.Add(n)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				time.Sleep(time.Millisecond) // hold it a while: overlap with the others
				inUse.Add(-n)
				w.Release(n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := peak.Load(); p > limit {
		t.Fatalf("%d permits in use at once, above the limit %d", p, limit)
	}
	t.Logf("at most %d permits in use at once", peak.Load())
	info, err := redisClient(t, srv).Semaphore("pool", limit).Inspect(ctx)
	if err != nil || len(info.Holders) != 0 || views[0].Held()+views[1].Held() != 0 {
		t.Fatalf("after the goroutines: %+v %v, want no holder", info, err)
	}
}
