package distlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
)

// TestLostSetStopsRenewingItsMembers: a member of a set force-released by
// an administrator ends the set, and the watchdog stops renewing the other
// members: they lapse at their ttl (each lost as expired, at its own
// deadline), so a waiter for one of them is served although the holder's
// code never calls Release. Before, the other members were renewed until
// Release: the waiter waited as long as the code did.
func TestLostSetStopsRenewingItsMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := memory.New()
	defer eng.Close()
	holder, other := distlock.New(eng), distlock.New(eng)
	defer holder.Close()
	defer other.Close()

	const ttl = time.Second
	set, err := holder.AcquireAll(ctx, []string{"a", "b", "c"}, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	waiter := make(chan error, 1)
	go func() {
		l, err := other.Acquire(ctx, "c")
		if err == nil {
			err = l.Release(ctx)
		}
		waiter <- err
	}()
	enginetest.WaitFor(t, 20*time.Second, "the waiter to queue for c", func() bool {
		info, err := other.Inspect(ctx, "c")
		return err == nil && info.Waiters == 1
	})
	if ok, err := other.ForceRelease(ctx, "b"); err != nil || !ok {
		t.Fatalf("force-release of b: %v, %v", ok, err)
	}
	select {
	case <-set.Done():
	case <-ctx.Done():
		t.Fatal("the set did not end after its member b was force-released")
	}
	var lost *distlock.LostError
	if !errors.As(set.Err(), &lost) || lost.Name != "b" || lost.Cause != distlock.TakenOver {
		t.Fatalf("set.Err() = %v; want b's loss, taken over", set.Err())
	}
	c := set.Lease("c")
	select {
	case <-c.Done():
	case <-time.After(10 * ttl):
		t.Fatalf("the member c was still held %v after the set ended: renewed (deadline %v)", 10*ttl, c.Deadline())
	}
	if !errors.As(c.Err(), &lost) || lost.Cause != distlock.Expired || lost.At.Before(c.Deadline()) {
		t.Fatalf("the member c ended with %v; want lost as expired, at or after its deadline %v", c.Err(), c.Deadline())
	}
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatalf("the waiter for c: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiter for c was not served")
	}
	if err := set.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release after the loss = %v; want ErrNotHeld (the members were lost)", err)
	}
}

// TestSetMemberReleasedAloneKeepsTheOthers: releasing one member's Lease
// ends the set (ErrReleased) and leaves the others held until Release, as
// the code asked (only a loss releases the rest by itself).
func TestSetMemberReleasedAloneKeepsTheOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := memory.New()
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	set, err := c.AcquireAll(ctx, []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Lease("x").Release(ctx); err != nil {
		t.Fatal(err)
	}
	if set.Err() != distlock.ErrReleased {
		t.Fatalf("set.Err() = %v; want ErrReleased", set.Err())
	}
	if info, err := c.Inspect(ctx, "y"); err != nil || !info.Held {
		t.Fatalf("y after x was released alone: %+v, %v; want still held", info, err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatalf("Release after a member was released alone = %v; want nil (y released)", err)
	}
	if info, err := c.Inspect(ctx, "y"); err != nil || info.Held {
		t.Fatalf("y after Release: %+v, %v; want free", info, err)
	}
	if err := set.Release(ctx); err != distlock.ErrReleased {
		t.Fatalf("a second Release = %v; want ErrReleased", err)
	}
}
