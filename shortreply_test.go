package distlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// shortExtend wraps an engine whose Extend drops the last result of every
// batch and reports no error, as a buggy third-party engine or a proxy that
// loses a batch element would.
type shortExtend struct{ engine.Engine }

func (s shortExtend) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	res, err := s.Engine.Extend(ctx, rs)
	if len(res) > 0 {
		res = res[:len(res)-1]
	}
	return res, err
}

// TestShortExtendReply: every path that reads an Extend answer (Lease.Extend,
// Attach, the watchdog) turns an answer with too few results into a
// *BackendError, without panicking; the lease stays as it was.
func TestShortExtendReply(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	c := distlock.New(shortExtend{mem})
	defer c.Close()

	l, err := c.Acquire(ctx, "short", distlock.WithAutoRenew(false), distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	deadline := l.Deadline()
	err = l.Extend(ctx, 20*time.Second)
	var be *distlock.BackendError
	if !errors.As(err, &be) || be.Op != "extend" {
		t.Fatalf("Extend with a short reply: %v, want a *BackendError", err)
	}
	if l.Err() != nil || !l.Deadline().Equal(deadline) || l.TTL() != 10*time.Second {
		t.Fatalf("the lease changed after a failed extension: err %v, ttl %v", l.Err(), l.TTL())
	}

	_, err = c.Attach(ctx, "short", l.Owner())
	if !errors.As(err, &be) || be.Op != "attach" {
		t.Fatalf("Attach with a short reply: %v, want a *BackendError", err)
	}

}

// TestShortExtendReplyWatchdog: the watchdog's renewals all answered short
// fail, so the lease is lost exactly at its deadline as unreachable, with
// the short reply as the reason (on a fake clock, testing/synctest).
func TestShortExtendReplyWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := distlock.New(shortExtend{memory.New()})
		defer c.Close()
		w, err := c.Acquire(context.Background(), "short-watchdog", distlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		deadline := w.Deadline()
		select {
		case <-w.Done():
		case <-time.After(time.Minute):
			t.Fatal("the lease outlived its deadline with every renewal answered short")
		}
		if !time.Now().Equal(deadline) {
			t.Fatalf("lost %v after its deadline, want at it", time.Since(deadline))
		}
		var lost *distlock.LostError
		if !errors.As(w.Err(), &lost) || lost.Cause != distlock.Unreachable || lost.Err == nil {
			t.Fatalf("watchdog with short replies: %v, want lost (unreachable) with the reason", w.Err())
		}
	})
}
