package distlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// lostReply is the memory engine whose next Extend, once armed, is applied
// and its answer lost: the caller gets errDown.
type lostReply struct {
	*memory.Engine
	armed atomic.Bool
}

func (e *lostReply) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	res, err := e.Engine.Extend(ctx, rs)
	if e.armed.CompareAndSwap(true, false) {
		return nil, errDown
	}
	return res, err
}

// TestFakeClockShorterExtensionLostReply: an Extend or ReleaseAfter to a
// ttl shorter than the lease's time left that the lock service applied but
// whose answer was lost brings the lease's deadline forward to that ttl's
// (found by an outside tester: the lease kept its old deadline and read
// held for about 7.7 s after another client was granted the lock, on the
// embedded engine, Redis, Redlock, PostgreSQL and ZooKeeper). Without
// renewal the lease is lost before anybody else is granted; with renewal
// the watchdog's next renewal, sent before the new deadline, restores the
// lease's own ttl and nobody else is granted.
func TestFakeClockShorterExtensionLostReply(t *testing.T) {
	const long, short = time.Minute, 3 * time.Second
	for _, tc := range []struct {
		what string
		call func(*distlock.Lease) error
	}{
		{"Extend", func(l *distlock.Lease) error { return l.Extend(context.Background(), short) }},
		{"ReleaseAfter", func(l *distlock.Lease) error { return l.ReleaseAfter(context.Background(), short) }},
	} {
		for _, renew := range []bool{false, true} {
			name := tc.what + "/no-renewal"
			if renew {
				name = tc.what + "/renewed"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx := context.Background()
					eng := &lostReply{Engine: memory.New()}
					holder, other := distlock.New(eng), distlock.New(eng)
					defer holder.Close()
					defer other.Close()
					l, err := holder.Acquire(ctx, "n", distlock.WithTTL(long), distlock.WithAutoRenew(renew))
					if err != nil {
						t.Fatal(err)
					}
					eng.armed.Store(true)
					sent := time.Now()
					if err := tc.call(l); !errors.Is(err, distlock.ErrBackend) {
						t.Fatalf("%s with its answer lost: %v, want ErrBackend", tc.what, err)
					}
					if !renew {
						if want := validity(sent, short); l.Deadline().After(want) {
							t.Fatalf("deadline %v after the lost %s, want at most %v", l.Deadline().Sub(sent), tc.what, want.Sub(sent))
						}
					}
					// The lock service ends the shorter hold at sent+short.
					time.Sleep(short + time.Millisecond)
					granted, err := other.TryAcquire(ctx, "n")
					switch {
					case renew && err == nil:
						t.Fatalf("another owner was granted the lock the watchdog renews (token %d)", granted.Token())
					case renew && l.Err() != nil:
						t.Fatalf("the renewed lease ended: %v", l.Err())
					case !renew && err != nil:
						t.Fatalf("the lock after its shorter ttl: %v", err)
					case !renew && l.Err() == nil:
						t.Fatalf("the lease reads held while token %d holds the lock", granted.Token())
					}
				})
			})
		}
	}
}
