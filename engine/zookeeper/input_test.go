package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// TestTTLAboveSession: a ttl above the session timeout the ensemble
// granted is refused with an *ArgumentError (ErrInvalidArgument through the
// Client) and changes nothing; the session timeout itself is taken.
func TestTTLAboveSession(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	e := dial(t, ens.Servers())
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "ttl-above-session"
	_, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", TTL: e.SessionTimeout() + time.Millisecond})
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) || ae.Arg != "ttl" {
		t.Fatalf("engine Acquire with a ttl above the session: %v, want an *ArgumentError for ttl", err)
	}
	if _, err := c.Acquire(ctx, name, distlock.WithTTL(e.SessionTimeout()+time.Second)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("Client Acquire with a ttl above the session: %v, want ErrInvalidArgument", err)
	}
	if info, err := c.Inspect(ctx, name); err != nil || info.Held || info.Waiters != 0 {
		t.Fatalf("the refused calls changed the lock: %+v, %v", info, err)
	}
	l, err := c.Acquire(ctx, name, distlock.WithTTL(e.SessionTimeout()))
	if err != nil {
		t.Fatalf("a ttl of the session timeout: %v", err)
	}
	_ = l.Release(ctx)
}

// TestSharedBadInput: an unknown shared kind and a limit below 1 are
// refused with an *ArgumentError and store nothing (no kind, no holder).
func TestSharedBadInput(t *testing.T) {
	t.Parallel()
	e := dial(t, shared(t, 1).Servers())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "shared-bad-input"
	req := func(kind engine.Kind, limit int) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: "o", TTL: time.Minute, Kind: kind, Limit: limit, Weight: 1}
	}
	for what, call := range map[string]func() error{
		"a mutex with a limit": func() error {
			_, err := e.Acquire(ctx, req(engine.Mutex, 2))
			return err
		},
		"kind 9": func() error {
			_, err := e.Acquire(ctx, req(9, 2))
			return err
		},
		"limit 0": func() error { _, err := e.SetLimit(ctx, name, 0); return err },
		"limit -1": func() error {
			_, err := e.Acquire(ctx, req(engine.Semaphore, -1))
			return err
		},
	} {
		var ae *engine.ArgumentError
		if err := call(); !errors.As(err, &ae) {
			t.Fatalf("%s: %v, want an *engine.ArgumentError", what, err)
		}
	}
	info, err := e.Inspect(ctx, name)
	if err != nil || info.Held || info.Kind != 0 || info.Limit != 0 || info.Waiters != 0 {
		t.Fatalf("the refused calls changed the lock: %+v, %v", info, err)
	}
}
