//go:build unix && !lite

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redistest"
)

// takenOverCLI waits until l is lost as taken over.
func takenOverCLI(t *testing.T, done <-chan struct{}, errf func() error, who string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not told within 30s of the force-release", who)
	}
	var le *distlock.LostError
	if err := errf(); !errors.As(err, &le) || le.Cause != distlock.TakenOver {
		t.Fatalf("%s: %v; want a *LostError TakenOver", who, err)
	}
}

// TestStrangerAdminCLIForceReleaseOwnerOfMutexes: distlock force-release
// --owner on the mutex kinds (a plain mutex re-entered, an election's
// leader, a member of an AcquireAll set) frees that holder only, says what
// it frees as a mutex (before the fix it showed a semaphore's weight,
// "×0", the weight of the holder the Client's Inspect makes up for a
// mutex), and the holder is told taken over at its next renewal (the set
// names the member lost); a latch of the same name keeps its count, and
// force-release of a name that only a latch uses frees nothing. (Whether
// the set's other member stays held until Release is left open: see
// engine/postgres's TestStrangerPGLostSetKeepsMembers.)
func TestStrangerAdminCLIForceReleaseOwnerOfMutexes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := cli{redis: srv.URL()}
	const ttl = 3 * time.Second // renewals every second: the holders hear soon

	m1, err := lib.Acquire(ctx, "cli-mutex", distlock.WithOwner("re-owner"), distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := lib.Acquire(ctx, "cli-mutex", distlock.WithOwner("re-owner"), distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	ld, err := lib.Campaign(ctx, "cli-election", "leader-value", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	set, err := lib.AcquireAll(ctx, []string{"cli-set-1", "cli-set-2"}, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	latch := lib.CountDownLatch("cli-election")
	if ok, err := latch.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}

	r := c.run(t, "force-release", "--yes", "--owner", "re-owner", "cli-mutex")
	expect(t, r, 0, `"cli-mutex" is held by re-owner, the mutex, 2 holds (re-entered)`, "released re-owner's hold")
	r = c.run(t, "force-release", "--yes", "--owner", ld.Lease().Owner(), "cli-election")
	expect(t, r, 0, `"cli-election" is held by `+ld.Lease().Owner()+", the mutex (", "metadata: leader-value")
	r = c.run(t, "force-release", "--yes", "--owner", set.Owner("cli-set-2"), "cli-set-2")
	expect(t, r, 0, "the mutex (")
	for _, out := range []string{r.stderr, r.stdout} {
		if strings.Contains(out, "×") {
			t.Errorf("a mutex's holder shown with a weight:\n%v", r)
		}
	}

	takenOverCLI(t, m1.Done(), m1.Err, "the first hold")
	takenOverCLI(t, m2.Done(), m2.Err, "the re-entered hold")
	takenOverCLI(t, ld.Done(), ld.Err, "the leader")
	takenOverCLI(t, set.Done(), set.Err, "the set")
	var le *distlock.LostError
	if errors.As(set.Err(), &le) && le.Name != "cli-set-2" {
		t.Errorf("the set's loss names %q, want cli-set-2", le.Name)
	}
	_ = set.Release(ctx)
	for _, n := range []string{"cli-mutex", "cli-election", "cli-set-1", "cli-set-2"} {
		expect(t, c.run(t, "status", n), 0, "state:             free")
	}
	if n, err := latch.Count(ctx); err != nil || n != 2 {
		t.Errorf("the latch beside the election: %d, %v; want 2", n, err)
	}
	only := lib.CountDownLatch("cli-latch-only")
	if ok, err := only.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	expect(t, c.run(t, "force-release", "--yes", "cli-latch-only"), 0, "is not held: nothing to release")
	if n, err := only.Count(ctx); err != nil || n != 1 {
		t.Errorf("the latch alone: %d, %v; want 1", n, err)
	}
}

// TestStrangerAdminCLILeaksLatch: distlock leaks lists a counting latch
// (its count has no expiry by design, docs/API.md) and must not tell the
// operator to delete it as an unknown key: deleting it opens the latch
// early (its waiters return as at zero,
// TestStrangerAdminLatchKeyDeletedWhileWaiting in the root package). Before
// the fix the latch was an "other" key with the advice "find out what wrote
// them, then delete them with redis-cli DEL KEY".
func TestStrangerAdminCLILeaksLatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := cli{redis: srv.URL()}
	latch := lib.CountDownLatch("leaky-latch")
	if ok, err := latch.TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	r := c.run(t, "leaks")
	expect(t, r, exitFailed, "distlock:{leaky-latch}:latch", "latch (hash)", "A countdown latch still counting has no expiry by design")
	if strings.Contains(r.stdout, "DEL") {
		t.Errorf("leaks tells to delete a counting latch:\n%v", r)
	}
	// With an unknown key beside it, the advice for unknown keys comes back.
	if err := srv.Client().Set(ctx, "distlock:junk", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, c.run(t, "leaks"), exitFailed, "distlock:junk", "Other keys: find out what wrote them", "A countdown latch still counting")
	if n, err := latch.Count(ctx); err != nil || n != 3 {
		t.Errorf("the latch after leaks: %d, %v; want 3", n, err)
	}
}
