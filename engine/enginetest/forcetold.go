package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// forceReleaseTellsEveryHold: a force-release tells every lease of the
// freed owner that it was taken over, as on the embedded engine: two
// re-entrant holds of one owner on two Clients (a mutex, and a reader where
// the engine keeps shared locks), each told at its own renewal; a hold
// released before any renewal told it (Release's error holds the
// *LostError), a set's member too (ReleaseMulti); and an election's leader
// whose first call after the force-release is Proclaim. (Before, ZooKeeper told the second hold
// "expired": the first hold's renewal took the force-release's mark away;
// etcd's Proclaim answered "expired": it did not read the marks a renewal
// reads; and every engine answered such a release "not held", which the
// Client reported as expired.)
func (s *suite) forceReleaseTellsEveryHold(t *testing.T) {
	if _, ok := s.h.New(t).(engine.ForceReleaser); !ok {
		t.Skip("the engine cannot force-release (engine.ForceReleaser)")
	}
	ctx := ctxTimeout(t, 60*time.Second)
	const ttl = 9 * time.Second
	admin := s.client(t)
	kinds := []string{"mutex"}
	if _, ok := s.h.New(t).(engine.Sharer); ok {
		kinds = append(kinds, "reader")
	}
	take := func(kind, name, owner string) *distlock.Lease {
		t.Helper()
		c := s.client(t)
		opts := []distlock.Option{distlock.WithOwner(owner), distlock.WithTTL(ttl)}
		var l *distlock.Lease
		var err error
		if kind == "reader" {
			l, err = c.RWMutex(name).RLock(ctx, opts...)
		} else {
			l, err = c.Acquire(ctx, name, opts...)
		}
		if err != nil {
			t.Fatalf("%s, owner %s: %v", kind, owner, err)
		}
		return l
	}
	force := func(name string) {
		t.Helper()
		if held, err := admin.ForceRelease(ctx, name); err != nil || !held {
			t.Fatalf("ForceRelease(%s): %v, %v", name, held, err)
		}
	}
	for _, kind := range kinds {
		name := lockName(t) + "-" + kind
		owner := "owner-of-" + kind
		first, second := take(kind, name, owner), take(kind, name, owner)
		force(name)
		takenOver(t, first, "the "+kind+"'s first hold")
		takenOver(t, second, "the "+kind+"'s second hold")

		name += "-released"
		l := take(kind, name, owner)
		force(name)
		err := l.Release(ctx)
		var lost *distlock.LostError
		if !errors.Is(err, distlock.ErrNotHeld) || !errors.As(err, &lost) || lost.Cause != distlock.TakenOver {
			t.Fatalf("the %s's release after a force-release: %v, want ErrNotHeld with a *LostError, taken over", kind, err)
		}
	}

	// A set's member, released with the set (ReleaseMulti, where the
	// engine has it) right after a force-release of it.
	members := []string{lockName(t) + "-set-a", lockName(t) + "-set-b"}
	set, err := s.client(t).AcquireAll(ctx, members, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	force(members[0])
	err = set.Release(ctx)
	var lostMember *distlock.LostError
	if !errors.Is(err, distlock.ErrNotHeld) || !errors.As(err, &lostMember) || lostMember.Cause != distlock.TakenOver {
		t.Fatalf("a set's release after a force-release of a member: %v, want ErrNotHeld with a *LostError, taken over", err)
	}

	name := lockName(t) + "-election"
	ld, err := s.client(t).Campaign(ctx, name, "v1", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if held, err := admin.ForceRelease(ctx, name); err != nil || !held {
		t.Fatalf("ForceRelease(election): %v, %v", held, err)
	}
	err = ld.Proclaim(ctx, "v2")
	var lost *distlock.LostError
	if !errors.As(err, &lost) || lost.Cause != distlock.TakenOver {
		t.Fatalf("the freed leader's Proclaim: %v, want a *LostError, taken over", err)
	}
	takenOver(t, ld.Lease(), "the freed leader")
}
