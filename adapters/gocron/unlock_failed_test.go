package gocronlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	gocronlock "github.com/distlock/distlock/adapters/gocron"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// shortRefused is the memory engine failing every extension to a ttl
// shorter than a minute (an Unlock's minimum hold) as a stalled backend
// would, while renewals at the lease's own ttl are answered.
type shortRefused struct{ *memory.Engine }

func (e shortRefused) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	for _, r := range rs {
		if r.TTL < time.Minute {
			return nil, errors.New("backend down")
		}
	}
	return e.Engine.Extend(ctx, rs)
}

// TestUnlockAfterFailedMinHold: an Unlock whose minimum hold cannot be set
// (ReleaseAfter fails) does not leave the job's lock renewed for as long as
// the Client lives: it tries again until the minimum hold has passed, then
// releases, and another scheduler runs the job's next tick (found by an
// outside tester: the lock was still renewed 25 s after the Unlock, which
// had returned the error).
func TestUnlockAfterFailedMinHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := shortRefused{memory.New()}
		a, b := distlock.New(eng), distlock.New(eng)
		defer a.Close()
		defer b.Close()
		const minHold = 5 * time.Second
		la := gocronlock.NewLocker(a, gocronlock.WithMinHold(minHold), gocronlock.WithLockOptions(distlock.WithTTL(time.Minute)))
		lb := gocronlock.NewLocker(b, gocronlock.WithMinHold(minHold))
		ctx := context.Background()
		start := time.Now()
		lock, err := la.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		_ = lock.Unlock(ctx)
		if held := time.Since(start); held < minHold-distlock.MinTTL {
			t.Fatalf("Unlock returned %v after the grant, within the minimum hold %v", held, minHold)
		}
		l, err := lb.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("the next tick after the failed minimum hold, %v after the grant: %v", time.Since(start), err)
		}
		_ = l.Unlock(ctx)
	})
}
