package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
)

// shortSession is the session timeout of the session tests' cut-off
// clients: their sessions expire quickly once cut off.
const shortSession = 2 * time.Second

// dialShort returns an engine with a short session through the proxy.
func dialShort(t *testing.T, addr string) *zkengine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := zkengine.Dial(ctx, []string{addr}, shortSession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// TestHolderCutOffToldFirst: a holder whose client is cut off from the
// ensemble (its session's heartbeats stop, as a paused process's) is told
// its lease is lost before another client is granted the lock, whether the
// lock goes by its ttl or with the holder's expired session.
func TestHolderCutOffToldFirst(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	p := startProxy(t, ens.Servers()[0])
	he := dialShort(t, p.Addr())
	holder := distlock.New(he)
	t.Cleanup(func() { _ = holder.Close() })
	other := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = other.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := "cut-off-holder"
	// The longest ttl the engine takes: the session timeout granted.
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(he.SessionTimeout()))
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	w, err := other.Acquire(ctx, name, distlock.WithTTL(5*time.Second))
	granted := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	select {
	case <-l.Done():
	default:
		t.Fatalf("another client was granted the lock while the cut-off holder was not told (lease deadline %v from now)", time.Until(l.Deadline()))
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || !lost.At.Before(granted) {
		t.Fatalf("holder's loss %v (at %v) not before the grant at %v", l.Err(), lost, granted)
	}
	if w.Token() <= l.Token() {
		t.Fatalf("token after the loss %d not above %d", w.Token(), l.Token())
	}
}

// TestWaiterSessionExpired: a waiter whose session expires while it
// waits (its client cut off for longer than the session timeout) ends its
// wait with ErrSessionExpired: its place in line went with the session.
func TestWaiterSessionExpired(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	holder := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = holder.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := "expired-waiter"
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	p := startProxy(t, ens.Servers()[0])
	waiter := distlock.New(dialShort(t, p.Addr()))
	t.Cleanup(func() { _ = waiter.Close() })
	got := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(ctx, name, distlock.WithTTL(shortSession))
		got <- err
	}()
	waitUntil(t, 20*time.Second, "the waiter to queue", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	p.Freeze()
	waitUntil(t, 20*time.Second, "the waiter's place to go with its session", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 0
	})
	p.Thaw()
	select {
	case err := <-got:
		if !errors.Is(err, zkengine.ErrSessionExpired) {
			t.Fatalf("the waiter whose session expired: %v, want ErrSessionExpired", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter whose session expired still waits after 30s")
	}
}

// waitUntil polls cond (test-side only) until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
