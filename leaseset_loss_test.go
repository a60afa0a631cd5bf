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

// TestLostSetReleasesItsMembers: a member of a set force-released by an
// administrator ends the set, and the set releases its other members by
// itself, so a waiter for one of them is served without the holder's
// code calling Release (which then reports the loss once, and
// ErrReleased after). Before, the other members stayed held and renewed
// until Release.
func TestLostSetReleasesItsMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := memory.New()
	defer eng.Close()
	holder, other := distlock.New(eng), distlock.New(eng)
	defer holder.Close()
	defer other.Close()

	set, err := holder.AcquireAll(ctx, []string{"a", "b", "c"}, distlock.WithTTL(time.Second))
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
	// The holder's code has not called Release: the set's other members
	// are given back by the set itself.
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatalf("the waiter for c: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiter for c was not served: the lost set kept its member c")
	}
	enginetest.WaitFor(t, 20*time.Second, "a freed", func() bool {
		info, err := other.Inspect(ctx, "a")
		return err == nil && !info.Held
	})
	if err := set.Release(ctx); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Release after the loss = %v; want the loss of b (ErrLeaseLost)", err)
	}
	if err := set.Release(ctx); err != distlock.ErrReleased {
		t.Fatalf("a second Release = %v; want ErrReleased", err)
	}
}

// TestSetMemberReleasedAloneReleasesTheSet: releasing one member's Lease
// ends the set (ErrReleased) and gives every member back.
func TestSetMemberReleasedAloneReleasesTheSet(t *testing.T) {
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
	enginetest.WaitFor(t, 20*time.Second, "y freed", func() bool {
		info, err := c.Inspect(ctx, "y")
		return err == nil && !info.Held
	})
	if err := set.Release(ctx); err != nil {
		t.Fatalf("Release after a member was released alone = %v; want nil (y released)", err)
	}
	if err := set.Release(ctx); err != distlock.ErrReleased {
		t.Fatalf("a second Release = %v; want ErrReleased", err)
	}
}
