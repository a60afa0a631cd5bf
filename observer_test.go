package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// recorder counts Observer events.
type recorder struct {
	mu                                      sync.Mutex
	acquired, contended, failed, waiting    int
	renewOK, renewFailed, released, lostCnt int
	lostCause                               distlock.LossCause
}

func (r *recorder) Acquired(_ string, _ time.Duration, contended bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acquired++
	if contended {
		r.contended++
	}
}
func (r *recorder) AcquireFailed(string, time.Duration, error) {
	r.mu.Lock()
	r.failed++
	r.mu.Unlock()
}
func (r *recorder) Waiting(_ string, d int) { r.mu.Lock(); r.waiting += d; r.mu.Unlock() }
func (r *recorder) Renewed(_ string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.renewOK++
	} else {
		r.renewFailed++
	}
}
func (r *recorder) Released(string, time.Duration) { r.mu.Lock(); r.released++; r.mu.Unlock() }
func (r *recorder) Lost(_ string, c distlock.LossCause, _ time.Duration) {
	r.mu.Lock()
	r.lostCnt++
	r.lostCause = c
	r.mu.Unlock()
}

// TestObserver: every event reaches the Observer, counted exactly (on a
// fake clock, testing/synctest): two renewals of a lease held for 2.5s with
// ttl 3s, a contended grant at the release, a loss by expiry.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		eng := memory.New()
		c := distlock.New(eng, distlock.WithObserver(&rec))
		defer c.Close()
		ctx := context.Background()

		l, err := c.Acquire(ctx, "obs", distlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			l2, err := c.Acquire(ctx, "obs", distlock.WithTTL(time.Second), distlock.WithAutoRenew(false))
			if err == nil {
				<-l2.Done() // lost by expiry
			}
			got <- err
		}()
		time.Sleep(2500 * time.Millisecond) // renewals at 1s and 2s
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if _, err := c.TryAcquire(ctx, ""); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatal(err)
		}
		rec.mu.Lock()
		events := fmt.Sprintf("acquired=%d contended=%d failed=%d waiting=%d renewOK=%d released=%d lost=%d cause=%v",
			rec.acquired, rec.contended, rec.failed, rec.waiting, rec.renewOK, rec.released, rec.lostCnt, rec.lostCause)
		rec.mu.Unlock()
		want := "acquired=2 contended=1 failed=0 waiting=0 renewOK=2 released=1 lost=1 cause=expired"
		if events != want {
			t.Fatalf("events:\n got %s\nwant %s", events, want)
		}
	})
}
