package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
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

func TestObserver(t *testing.T) {
	var rec recorder
	eng := memory.New()
	c := distlock.New(eng, distlock.WithObserver(&rec))
	defer c.Close()
	ctx := context.Background()

	l, err := c.Acquire(ctx, "obs", distlock.WithTTL(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := c.Acquire(ctx, "obs", distlock.WithTTL(60*time.Millisecond), distlock.WithAutoRenew(false))
		if err == nil {
			<-l2.Done() // lost by expiry
		}
		got <- err
	}()
	time.Sleep(120 * time.Millisecond) // a renewal or two
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
	events := fmt.Sprintf("acquired=%d contended=%d failed=%d waiting=%d renewOK>0=%t released=%d lost=%d cause=%v",
		rec.acquired, rec.contended, rec.failed, rec.waiting, rec.renewOK > 0, rec.released, rec.lostCnt, rec.lostCause)
	rec.mu.Unlock()
	want := "acquired=2 contended=1 failed=0 waiting=0 renewOK>0=true released=1 lost=1 cause=expired"
	if events != want {
		t.Fatalf("events:\n got %s\nwant %s", events, want)
	}
}
