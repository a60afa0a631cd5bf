package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// releaseAfterExpiry: a lease that ran out without renewal, released once
// the engine too counts it expired, answers ErrNotHeld holding the
// *LostError of its expiry, on a mutex and (where the engine keeps shared
// locks) a reader, as on the embedded engine, whether or not the backend
// still kept a record of the hold. (Before, ZooKeeper's release found the
// expired holder's node, not yet swept, dropped it, and the Client
// answered nil.)
func (s *suite) releaseAfterExpiry(t *testing.T) {
	ctx := ctxTimeout(t, 60*time.Second)
	kinds := []string{"mutex"}
	if _, ok := s.h.New(t).(engine.Sharer); ok {
		kinds = append(kinds, "reader")
	}
	for _, kind := range kinds {
		name := lockName(t) + "-" + kind
		c := s.client(t)
		opts := []distlock.Option{distlock.WithTTL(300 * time.Millisecond), distlock.WithAutoRenew(false)}
		var l *distlock.Lease
		var err error
		if kind == "reader" {
			l, err = c.RWMutex(name).RLock(ctx, opts...)
		} else {
			l, err = c.Acquire(ctx, name, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		<-l.Done()
		WaitFor(t, 30*time.Second, "the engine to count the "+kind+" expired", func() bool {
			info, err := c.Inspect(ctx, name)
			return err == nil && !info.Held
		})
		err = l.Release(ctx)
		var lost *distlock.LostError
		if !errors.Is(err, distlock.ErrNotHeld) || !errors.As(err, &lost) || lost.Cause != distlock.Expired {
			t.Fatalf("the %s's release after its expiry: %v, want ErrNotHeld with a *LostError, expired", kind, err)
		}
	}
}
