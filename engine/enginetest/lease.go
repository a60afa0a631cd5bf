package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

const shortTTL = 300 * time.Millisecond

// watchdogKeeps holds a 300ms lease through 3s of work.
func (s *suite) watchdogKeeps(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l, err := c.Acquire(ctx, name, distlock.WithTTL(shortTTL))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
		t.Fatalf("lease lost during work: %v", l.Err())
	case <-time.After(3 * time.Second):
	}
	info, err := c.Inspect(ctx, name)
	if err != nil || info.Owner != l.Owner() {
		t.Fatalf("after 3s: %+v %v", info, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// noRenewLoses is the control: the same lease without the watchdog is lost
// at its local deadline and the lock can be taken by another client.
func (s *suite) noRenewLoses(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l, err := c.Acquire(ctx, name, distlock.WithTTL(shortTTL), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("lease without renewal not lost after 10 ttls")
	}
	if now := time.Now(); now.Before(l.Deadline()) || now.Sub(l.Deadline()) > 50*time.Millisecond {
		t.Fatalf("loss signalled at %v from the deadline", now.Sub(l.Deadline()))
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Expired || !errors.Is(l.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want LostError(expired)", l.Err())
	}
	if _, err := s.client(t).Acquire(ctx, name); err != nil {
		t.Fatalf("another client after expiry: %v", err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, distlock.ErrNotHeld) || !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Extend after loss: %v", err)
	}
}

// lossOnDelete: when the lock disappears behind the holder's back, the
// holder is told within one renew interval, on all three channels.
func (s *suite) lossOnDelete(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l, err := c.Acquire(ctx, name, distlock.WithTTL(shortTTL))
	if err != nil {
		t.Fatal(err)
	}
	ttl := l.TTL() // as the engine keeps it (etcd: whole seconds, at least 2s)
	s.delete(t, c, name)
	deleted := time.Now()
	select {
	case <-l.Done():
	case <-time.After(ttl):
		t.Fatal("loss not signalled within a ttl of the deletion")
	}
	if lag := time.Since(deleted); lag > ttl/3+30*time.Millisecond {
		t.Fatalf("loss signalled %v after deletion, more than one renew interval", lag)
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Expired {
		t.Fatalf("Err = %v", l.Err())
	}
	if l.Context().Err() == nil || !errors.Is(context.Cause(l.Context()), distlock.ErrLeaseLost) {
		t.Fatalf("lease context not cancelled with the loss: %v", context.Cause(l.Context()))
	}
	if err := l.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release after loss: %v, want ErrNotHeld", err)
	}
}

func (s *suite) do(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 10*time.Second)
	boom := errors.New("boom")
	var token uint64
	err := c.Do(ctx, name, func(ctx context.Context) error {
		info, _ := c.Inspect(ctx, name)
		token = info.Token
		if !info.Held {
			t.Error("fn ran without the lock held")
		}
		return boom
	})
	if !errors.Is(err, boom) || err.Error() != boom.Error() {
		t.Fatalf("Do = %v, want fn's error alone", err)
	}
	if info, _ := c.Inspect(ctx, name); info.Held || token == 0 {
		t.Fatalf("after Do: %+v (token %d)", info, token)
	}
	if err := c.Do(ctx, name, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, name, nil); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("Do(nil fn) = %v", err)
	}
}

// doLoss: fn's context is cancelled when the lease is lost, and Do reports
// fn's error first, then the loss.
func (s *suite) doLoss(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 10*time.Second)
	boom := errors.New("work interrupted")
	err := c.Do(ctx, name, func(fctx context.Context) error {
		s.delete(t, c, name)
		select {
		case <-fctx.Done():
		case <-time.After(2 * time.Second):
			t.Error("fn's context not cancelled on loss")
		}
		if !errors.Is(context.Cause(fctx), distlock.ErrLeaseLost) {
			t.Errorf("cause = %v", context.Cause(fctx))
		}
		return boom
	}, distlock.WithTTL(shortTTL))
	if !errors.Is(err, boom) || !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Do = %v, want fn's error joined with the loss", err)
	}
	if u, ok := err.(interface{ Unwrap() []error }); !ok || !errors.Is(u.Unwrap()[0], boom) {
		t.Fatalf("fn's error is not first: %v", err)
	}
}

func (s *suite) closeReleases(t *testing.T) {
	c := distlock.New(s.h.New(t))
	other := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l, err := c.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), distlock.ErrReleased) {
		t.Fatalf("lease after Close: %v", l.Err())
	}
	if info, _ := other.Inspect(ctx, name); info.Held {
		t.Fatalf("Close left the lock held: %+v", info)
	}
	if _, err := c.Acquire(ctx, name); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
