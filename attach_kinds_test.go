package distlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// TestAttachSharedKindRefused: Attach rebuilds a mutex's lease; on a name
// its owner holds as a semaphore's permit or an RW lock's side it is
// refused with an *ArgumentError naming the kind (before, it said the live
// holder's lock was not held), and it changes nothing: the holder's lease
// stays valid. A mutex still attaches, and a name nobody holds is
// ErrNotHeld.
func TestAttachSharedKindRefused(t *testing.T) {
	eng := memory.New()
	t.Cleanup(func() { _ = eng.Close() })
	a, b := distlock.New(eng), distlock.New(eng)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	sem, err := a.Semaphore("s", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := a.RWMutex("rw").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*distlock.Lease{sem, rd} {
		_, err := b.Attach(ctx, l.Name(), l.Owner())
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) || errors.Is(err, distlock.ErrNotHeld) {
			t.Fatalf("Attach of %s held as a shared kind: %v, want an *ArgumentError naming its kind", l.Name(), err)
		}
		if l.Err() != nil {
			t.Fatalf("the holder of %s after the refused Attach: %v", l.Name(), l.Err())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	m, err := a.Acquire(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := b.Attach(ctx, "m", m.Owner()); err != nil {
		t.Fatalf("Attach of a held mutex: %v", err)
	} else if l.Token() != m.Token() {
		t.Fatalf("attached token %d, want %d", l.Token(), m.Token())
	}
	_ = m.Release(ctx)
	if _, err := b.Attach(ctx, "s", sem.Owner()); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Attach of a released semaphore permit: %v, want ErrNotHeld", err)
	}
}

// TestAttachSharedKindRefusedAfterForceRelease: the same refusal when a
// force-release freed the owner's earlier hold of the name and the owner
// holds it again (a semaphore's permit, a reader): the force-release's mark
// makes the mutex's extension answer "held by another owner", and Attach
// said so (ErrNotHeld) of a name only its owner held. Found by an outside
// differential probe (the embedded engine, and servers over etcd and
// PostgreSQL).
func TestAttachSharedKindRefusedAfterForceRelease(t *testing.T) {
	eng := memory.New()
	t.Cleanup(func() { _ = eng.Close() })
	a, b := distlock.New(eng), distlock.New(eng)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, take := range []func(opts ...distlock.Option) (*distlock.Lease, error){
		func(opts ...distlock.Option) (*distlock.Lease, error) {
			return a.Semaphore("s", 2).Acquire(ctx, opts...)
		},
		func(opts ...distlock.Option) (*distlock.Lease, error) { return a.RWMutex("rw").RLock(ctx, opts...) },
	} {
		first, err := take(distlock.WithOwner("o"))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.ForceReleaseHolder(ctx, first.Name(), "o"); err != nil {
			t.Fatal(err)
		}
		again, err := take(distlock.WithOwner("o"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Attach(ctx, again.Name(), "o")
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) || errors.Is(err, distlock.ErrNotHeld) {
			t.Fatalf("Attach of %s held again as a shared kind after a force-release: %v, want an *ArgumentError naming its kind", again.Name(), err)
		}
		if again.Err() != nil {
			t.Fatalf("the holder of %s after the refused Attach: %v", again.Name(), again.Err())
		}
	}
}
