package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// forceReleaseHolder: a force-release of one holder (Client.
// ForceReleaseHolder, engine.HolderReleaser) frees only that holder. Two
// readers hold a reader-writer lock and a writer queues: freeing the first
// reader tells it taken over (a renewal's answer, before its deadline)
// while the second keeps holding and the writer keeps waiting; asking
// again for the freed reader, or for an owner that never held, is a
// *NotHolderError (ErrNotHeld) that changes nothing, and an empty owner an
// ErrInvalidArgument; freeing the second reader wakes the writer, which
// gets the lock before that reader's lease would have ended. On a mutex,
// another owner's name is refused the same way and the holder's own frees
// it, the holder told taken over.
func (s *suite) forceReleaseHolder(t *testing.T) {
	s.sharer(t)
	if _, ok := s.h.New(t).(engine.HolderReleaser); !ok {
		t.Skip("the engine cannot force-release one holder")
	}
	ctx := ctxTimeout(t, 60*time.Second)
	c := s.client(t)
	name := lockName(t)
	const ttl = 9 * time.Second
	rw := c.RWMutex(name)
	a, err := rw.RLock(ctx, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.client(t).RWMutex(name).RLock(ctx, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := s.client(t).RWMutex(name).Lock(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	WaitFor(t, 20*time.Second, "the writer to queue", func() bool {
		info, err := rw.Inspect(ctx)
		return err == nil && info.Waiters == 1
	})

	if err := c.ForceReleaseHolder(ctx, name, a.Owner()); err != nil {
		t.Fatalf("ForceReleaseHolder(first reader): %v", err)
	}
	takenOver(t, a, "the freed reader")
	if info, err := rw.Inspect(ctx); err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != b.Owner() || info.Waiters != 1 {
		t.Fatalf("after freeing one reader: %+v, %v; want the other reader holding, the writer waiting", info, err)
	}
	if err := b.Extend(ctx, ttl); err != nil {
		t.Fatalf("the other reader lost its lease: %v", err)
	}
	select {
	case err := <-got:
		t.Fatalf("the writer ended its wait while a reader holds: %v", err)
	default:
	}

	for _, owner := range []string{a.Owner(), "never-held"} {
		err := c.ForceReleaseHolder(ctx, name, owner)
		var nh *distlock.NotHolderError
		if !errors.As(err, &nh) || !errors.Is(err, distlock.ErrNotHeld) || nh.Owner != owner || nh.Name != name {
			t.Fatalf("ForceReleaseHolder(%q, who holds nothing): %v, want a *NotHolderError matching ErrNotHeld", owner, err)
		}
	}
	if err := c.ForceReleaseHolder(ctx, name, ""); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("ForceReleaseHolder with an empty owner: %v, want ErrInvalidArgument", err)
	}
	// The engine itself: nobody holds as "", so nothing is freed (an
	// engine that read "" as everyone freed the other reader).
	if ok, err := s.h.New(t).(engine.HolderReleaser).ForceReleaseHolder(ctx, name, ""); ok || err != nil {
		t.Fatalf("the engine's ForceReleaseHolder with an empty owner: %v, %v; want false, nil (nobody holds as \"\")", ok, err)
	}
	if info, err := rw.Inspect(ctx); err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != b.Owner() || info.Waiters != 1 {
		t.Fatalf("a refused force-release changed the lock: %+v, %v", info, err)
	}

	deadline := b.Deadline()
	if err := c.ForceReleaseHolder(ctx, name, b.Owner()); err != nil {
		t.Fatalf("ForceReleaseHolder(last reader): %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the writer: %v", err)
		}
	case <-time.After(time.Until(deadline)):
		t.Fatal("freeing the last reader did not wake the writer: it waited out the reader's lease")
	}
	takenOver(t, b, "the last reader")

	// A mutex: only its holder's own name frees it.
	mutex := name + "-mutex"
	m, err := c.Acquire(ctx, mutex, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	var nh *distlock.NotHolderError
	if err := c.ForceReleaseHolder(ctx, mutex, "someone-else"); !errors.As(err, &nh) {
		t.Fatalf("ForceReleaseHolder(mutex, another owner): %v, want a *NotHolderError", err)
	}
	if info, err := c.Inspect(ctx, mutex); err != nil || info.Owner != m.Owner() {
		t.Fatalf("a refused force-release changed the mutex: %+v, %v", info, err)
	}
	if err := c.ForceReleaseHolder(ctx, mutex, m.Owner()); err != nil {
		t.Fatalf("ForceReleaseHolder(mutex, its holder): %v", err)
	}
	takenOver(t, m, "the mutex's holder")
	if info, err := c.Inspect(ctx, mutex); err != nil || info.Held {
		t.Fatalf("the mutex after its holder was freed: %+v, %v", info, err)
	}
}

// takenOver waits for l's loss and checks that it was signalled as taken
// over, by a renewal's answer before the lease's deadline.
func takenOver(t *testing.T, l *distlock.Lease, who string) {
	t.Helper()
	deadline := l.Deadline()
	select {
	case <-l.Done():
	case <-time.After(time.Until(deadline) + 10*time.Second):
		t.Fatalf("%s was never told of the force-release", who)
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || !lost.At.Before(deadline) {
		t.Fatalf("%s was not told of the force-release before its deadline: %v", who, l.Err())
	}
	if lost.Cause != distlock.TakenOver {
		t.Fatalf("%s lost its lease as %q, want %q", who, lost.Cause, distlock.TakenOver)
	}
}
