package distlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// endCounter counts the ends an Observer hears of.
type endCounter struct {
	mu                       sync.Mutex
	acquired, released, lost int
}

func (o *endCounter) Acquired(string, time.Duration, bool) { o.add(&o.acquired) }
func (o *endCounter) AcquireFailed(string, time.Duration, error) {
}
func (o *endCounter) Waiting(string, int)                            {}
func (o *endCounter) Renewed(string, bool)                           {}
func (o *endCounter) Released(string, time.Duration)                 { o.add(&o.released) }
func (o *endCounter) Lost(string, distlock.LossCause, time.Duration) { o.add(&o.lost) }

func (o *endCounter) add(n *int) {
	o.mu.Lock()
	*n++
	o.mu.Unlock()
}

func (o *endCounter) counts() (acquired, released, lost int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.acquired, o.released, o.lost
}

// TestReleaseAfter: on a fake clock, a lease ended by ReleaseAfter(2s)
// reads released at once and renews no more; the lock stays held for
// exactly the 2 s (another Client is refused until then, and granted
// after), also when the first Client is closed meanwhile (its Close does
// not release it: before, gocronlock's minimum hold was a second lease
// that Close released, and the same tick could run twice); the Observer
// hears one acquisition and one release, no loss (before, every gocron
// run counted two acquisitions and an expired lease).
func TestReleaseAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		obs := &endCounter{}
		a := distlock.New(eng, distlock.WithObserver(obs))
		b := distlock.New(eng)
		defer b.Close()
		ctx := context.Background()
		l, err := a.Acquire(ctx, "job", distlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // renewed meanwhile
		ended := time.Now()
		if err := l.ReleaseAfter(ctx, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(l.Err(), distlock.ErrReleased) {
			t.Fatalf("Err after ReleaseAfter: %v, want ErrReleased", l.Err())
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done open after ReleaseAfter")
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.TryAcquire(ctx, "job"); !errors.Is(err, distlock.ErrLocked) {
			t.Fatalf("another Client before the 2 s ran out: %v, want ErrLocked", err)
		}
		info, err := b.Inspect(ctx, "job")
		if err != nil || !info.Held || info.TTL != 2*time.Second-time.Since(ended) {
			t.Fatalf("Inspect: %+v %v, want held with %v left", info, err, 2*time.Second-time.Since(ended))
		}
		time.Sleep(2*time.Second - time.Since(ended))
		l2, err := b.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatalf("another Client once the 2 s ran out: %v", err)
		}
		if l2.Token() <= l.Token() {
			t.Fatalf("token %d after %d", l2.Token(), l.Token())
		}
		if acq, rel, lost := obs.counts(); acq != 1 || rel != 1 || lost != 0 {
			t.Fatalf("observed %d acquisitions, %d releases, %d losses; want 1, 1, 0", acq, rel, lost)
		}
		if err := l2.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReleaseAfterInput: a negative d is an *ArgumentError and changes
// nothing (the lease stays held and renewed); a d below MinTTL releases at
// once; a lease lost before is told so, as Extend tells it.
func TestReleaseAfterInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c, admin := distlock.New(eng), distlock.New(eng)
		defer c.Close()
		defer admin.Close()
		ctx := context.Background()
		l, err := c.Acquire(ctx, "in", distlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var ae *distlock.ArgumentError
		if err := l.ReleaseAfter(ctx, -time.Second); !errors.As(err, &ae) {
			t.Fatalf("ReleaseAfter(-1s): %v, want an *ArgumentError", err)
		}
		var noCtx context.Context // a nil context: the bad input tested
		if err := l.ReleaseAfter(noCtx, time.Second); !errors.As(err, &ae) {
			t.Fatalf("ReleaseAfter(nil ctx): %v, want an *ArgumentError", err)
		}
		time.Sleep(10 * time.Second) // renewed throughout
		if err := l.Err(); err != nil {
			t.Fatalf("the lease after refused calls: %v", err)
		}
		if err := l.ReleaseAfter(ctx, distlock.MinTTL/2); err != nil {
			t.Fatal(err)
		}
		if info, err := admin.Inspect(ctx, "in"); err != nil || info.Held {
			t.Fatalf("ReleaseAfter below MinTTL: %+v %v, want released at once", info, err)
		}
		l2, err := c.Acquire(ctx, "in", distlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := admin.ForceRelease(ctx, "in"); !ok || err != nil {
			t.Fatalf("ForceRelease: %v %v", ok, err)
		}
		if err := l2.ReleaseAfter(ctx, 2*time.Second); !errors.Is(err, distlock.ErrNotHeld) {
			t.Fatalf("ReleaseAfter of a force-released lease: %v, want ErrNotHeld", err)
		}
	})
}
