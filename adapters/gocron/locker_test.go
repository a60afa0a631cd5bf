package gocronlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	gocronlock "github.com/distlock/distlock/adapters/gocron"
	"github.com/distlock/distlock/engine/memory"
	"github.com/go-co-op/gocron/v2"
)

// A gocron scheduler whose jobs run under distlock's locks: on Redis (or
// any engine), every scheduler with the same Locker setting runs each
// tick of a job once between them.
func ExampleNewLocker() {
	client := distlock.New(memory.New()) // redisengine.New(redisClient) across processes
	defer client.Close()
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(gocronlock.NewLocker(client)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ran := make(chan struct{})
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func() { close(ran) }), gocron.WithName("nightly-report"))
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Start()
	<-ran
	_ = s.Shutdown()
	fmt.Println("ran under the lock gocron/nightly-report")
	// Output: ran under the lock gocron/nightly-report
}

// TestLockerMinHold: Unlock before the minimum hold time keeps the lock
// (without renewals) until exactly then, so another scheduler's late tick
// skips the run; then the lock expires on its own. (With the hold left
// out, the other Locker got the lock at once: seen to fail.)
func TestLockerMinHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		a, b := distlock.New(eng), distlock.New(eng)
		defer a.Close()
		defer b.Close()
		const minHold = 2 * time.Second
		la := gocronlock.NewLocker(a, gocronlock.WithMinHold(minHold))
		lb := gocronlock.NewLocker(b, gocronlock.WithMinHold(minHold))
		ctx := context.Background()
		start := time.Now()
		lock, err := la.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the run
		if err := lock.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(minHold - 300*time.Millisecond - time.Millisecond)
		if _, err := lb.Lock(ctx, "job"); !errors.Is(err, distlock.ErrLocked) {
			t.Fatalf("another Locker %v after the grant: %v, want ErrLocked", time.Since(start), err)
		}
		time.Sleep(time.Millisecond)
		if info, err := eng.Inspect(ctx, "gocron/job"); err != nil || info.Held {
			t.Fatalf("at the minimum hold time: %+v %v, want the lock expired", info, err)
		}
		next, err := lb.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("another Locker at the minimum hold time: %v", err)
		}
		if err := next.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLockerInvalid: a negative minimum hold time is an *ArgumentError
// and takes no lock.
func TestLockerInvalid(t *testing.T) {
	eng := memory.New()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	_, err := gocronlock.NewLocker(c, gocronlock.WithMinHold(-time.Second)).Lock(ctx, "job")
	var ae *distlock.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Lock: %v, want an *ArgumentError", err)
	}
	if info, err := eng.Inspect(ctx, "gocron/job"); err != nil || info.Held {
		t.Fatalf("after the refusal: %+v %v, want nothing held", info, err)
	}
}

// runCounter is an Observer that counts acquisitions, releases and losses.
type runCounter struct {
	mu                       sync.Mutex
	acquired, released, lost int
}

func (o *runCounter) Acquired(string, time.Duration, bool)       { o.mu.Lock(); o.acquired++; o.mu.Unlock() }
func (o *runCounter) AcquireFailed(string, time.Duration, error) {}
func (o *runCounter) Waiting(string, int)                        {}
func (o *runCounter) Renewed(string, bool)                       {}
func (o *runCounter) Released(string, time.Duration)             { o.mu.Lock(); o.released++; o.mu.Unlock() }
func (o *runCounter) Lost(string, distlock.LossCause, time.Duration) {
	o.mu.Lock()
	o.lost++
	o.mu.Unlock()
}

// TestLockerMinHoldOutlivesClose: scheduler A runs a short job, and shuts
// down right after (its Client closed, as NewLocker's doc asks, after the
// scheduler's Shutdown); scheduler B's tick of the same run, within the
// minimum hold, still finds the lock held, and the tick after the minimum
// hold gets it. One run is one acquisition and one release to A's
// Observer, never a loss. Before, the minimum hold was a second lease that
// Close released at once (B ran the same tick again), and its planned
// expiry counted as a lost lease on every run (outside tester's findings).
func TestLockerMinHoldOutlivesClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		obs := &runCounter{}
		a, b := distlock.New(eng, distlock.WithObserver(obs)), distlock.New(eng)
		defer b.Close()
		la := gocronlock.NewLocker(a, gocronlock.WithMinHold(2*time.Second))
		lb := gocronlock.NewLocker(b, gocronlock.WithMinHold(2*time.Second))
		ctx := context.Background()
		start := time.Now()
		lock, err := la.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the run
		if err := lock.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // B's tick of the same run
		if l, err := lb.Lock(ctx, "job"); !errors.Is(err, distlock.ErrLocked) {
			if l != nil {
				_ = l.Unlock(ctx)
			}
			t.Fatalf("B's tick %v after A's grant, within the minimum hold: %v, want ErrLocked", time.Since(start), err)
		}
		time.Sleep(2*time.Second - time.Since(start))
		l, err := lb.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("B's tick once the minimum hold ran out: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if obs.acquired != 1 || obs.released != 1 || obs.lost != 0 {
			t.Fatalf("one run observed as %d acquisitions, %d releases, %d losses; want 1, 1, 0", obs.acquired, obs.released, obs.lost)
		}
	})
}
