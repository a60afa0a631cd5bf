package distlock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// strangerEngines runs fn on the embedded engine and on a real
// redis-server, each with two Clients (two processes) on engines of their
// own over one authority; with DISTLOCK_STRANGER_CLUSTER=1 also on a
// three-master Redis Cluster.
func strangerEngines(t *testing.T, fn func(t *testing.T, a, b *distlock.Client, eng func() engine.Engine)) {
	t.Run("memory", func(t *testing.T) {
		m := memory.New()
		a, b := distlock.New(m), distlock.New(m)
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		fn(t, a, b, func() engine.Engine { return m })
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		mk := func() engine.Engine {
			e, err := redisengine.New(srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		}
		a, b := distlock.New(mk()), distlock.New(mk())
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		fn(t, a, b, mk)
	})
	if os.Getenv("DISTLOCK_STRANGER_CLUSTER") == "" {
		return // a Cluster costs seconds to start: on demand only
	}
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t, 3)
		mk := func() engine.Engine {
			e, err := redisengine.New(cl.Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		}
		a, b := distlock.New(mk()), distlock.New(mk())
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		fn(t, a, b, mk)
	})
}

func strangerCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func isArgErr(err error) bool {
	var ae *distlock.ArgumentError
	return errors.As(err, &ae)
}

// wantTakenOver waits until l is lost as TakenOver.
func wantTakenOver(t *testing.T, l *distlock.Lease, who string) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Done not closed within 30s of the force-release", who)
	}
	var le *distlock.LostError
	if !errors.As(l.Err(), &le) || le.Cause != distlock.TakenOver {
		t.Fatalf("%s: Err %v, want a *LostError TakenOver", who, l.Err())
	}
}

// TestStrangerAdminProclaimAfterForceRelease: a leader force-released
// (the whole election, or its holder by owner) and then calling Proclaim
// before its next renewal is told what happened: taken over (a *LostError
// with cause TakenOver, as its renewal would say, and as the README
// promises every holder a force-release freed), not that its lease
// expired; its Done is closed, and its Proclaim writes nothing over the
// next leader's value. Before the fix the engines' SetMetadata answered
// "nobody holds it" (Missing) for a force-released owner, which the
// Client reports as Expired: it ignored the taken-over mark that Extend
// reads.
func TestStrangerAdminProclaimAfterForceRelease(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, _ func() engine.Engine) {
		ctx := strangerCtx(t, 60*time.Second)
		for _, how := range []string{"ForceRelease", "ForceReleaseHolder"} {
			name := "proclaim-" + how
			// A long ttl: no renewal runs before the Proclaim.
			ld, err := a.Campaign(ctx, name, "first", distlock.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if how == "ForceRelease" {
				if ok, err := b.ForceRelease(ctx, name); err != nil || !ok {
					t.Fatalf("ForceRelease: %v, %v", ok, err)
				}
			} else if err := b.ForceReleaseHolder(ctx, name, ld.Lease().Owner()); err != nil {
				t.Fatalf("ForceReleaseHolder: %v", err)
			}
			err = ld.Proclaim(ctx, "after "+how)
			var le *distlock.LostError
			if !errors.As(err, &le) || le.Cause != distlock.TakenOver {
				t.Errorf("%s: Proclaim after it: %v; want a *LostError TakenOver", how, err)
			}
			wantTakenOver(t, ld.Lease(), how+": the leader")

			next, err := b.Campaign(ctx, name, "next")
			if err != nil {
				t.Fatal(err)
			}
			if next.Term() <= ld.Term() {
				t.Fatalf("%s: next term %d not above %d", how, next.Term(), ld.Term())
			}
			if err := ld.Proclaim(ctx, "stale"); err == nil {
				t.Fatalf("%s: the old leader's Proclaim succeeded under the next leader", how)
			}
			if l, err := a.Leader(ctx, name); err != nil || l.Value != "next" || l.Term != next.Term() {
				t.Fatalf("%s: Leader %+v, %v; want the next leader's value and term", how, l, err)
			}
			_ = next.Resign(ctx)
		}
	})
}

// TestStrangerAdminSetRefusedBeforeContention: a set (AcquireAll) one of
// whose names is held as another kind (a semaphore's permit, an RWMutex's
// reader) is refused at once with an *ArgumentError naming that name and
// its kind, and changes nothing, even when a name sorted before it is a
// mutex held by someone else: the README's "at once even for a waiting
// call, never contention". Every set path checked the names in sorted
// order and stopped at the first one held (memory's AcquireMulti, Redis's
// multi.lua, and the Client's name-by-name path, acquireOrdered, used on
// Cluster across slots and on the quorum): TryAcquireAll said the mutex
// was locked, and a waiting AcquireAll queued for the mutex until its
// context ended, minting tokens on the free name sorted first meanwhile.
// The one-step sets now check every name's kind before any contention,
// and acquireOrdered inspects the names before taking any (the
// conformance case SetKindBeforeContention holds every engine to it).
func TestStrangerAdminSetRefusedBeforeContention(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, _ func() engine.Engine) {
		ctx := strangerCtx(t, 60*time.Second)
		m, err := a.Acquire(ctx, "set-a-mutex") // sorted first
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = m.Release(ctx) }()
		sem, err := a.Semaphore("set-b-sem", 2).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sem.Release(ctx) }()
		rd, err := a.RWMutex("set-c-rw").RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rd.Release(ctx) }()
		free := "set-0-free" // sorted before the others: must stay free
		for _, other := range []string{"set-b-sem", "set-c-rw"} {
			names := []string{free, "set-a-mutex", other}
			before := map[string]distlock.Info{}
			for _, n := range names {
				before[n], _ = a.Inspect(ctx, n)
			}
			set, err := b.TryAcquireAll(ctx, names)
			if set != nil || !isArgErr(err) || !strings.Contains(err.Error(), other) {
				t.Errorf("TryAcquireAll(%v): %v, %v; want an *ArgumentError naming %q", names, set != nil, err, other)
			}
			// A waiting set: refused at once, not queued behind the mutex.
			// The context outlives the test's patience; the refusal must
			// come from the kind check, not from the context.
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			set, err = b.AcquireAll(wctx, names)
			cancel()
			if set != nil || !isArgErr(err) || wctx.Err() != nil && errors.Is(err, wctx.Err()) {
				t.Errorf("AcquireAll(%v): %v, %v; want an *ArgumentError at once", names, set != nil, err)
			}
			for _, n := range names {
				after, _ := a.Inspect(ctx, n)
				if after.Held != before[n].Held || after.Waiters != before[n].Waiters || after.HighWater != before[n].HighWater || after.Token != before[n].Token {
					t.Errorf("%s changed by the refused set: %+v, was %+v", n, after, before[n])
				}
			}
		}
	})
}

// TestStrangerAdminForceReleasedOwnerReacquired: a holder with an explicit
// owner (WithOwner), force-released, whose owner then takes the lock again
// in the same Client (a retry, a restarted job with a fixed owner id). The
// force-released lease must be told taken over at its next renewal, and
// its Release must not drop the new grant's hold. Both failed before, on
// the embedded engine and Redis, for a mutex and a semaphore: the new
// grant (a new token) clears the owner's taken-over mark, the old lease's
// renewals found "its" owner holding and were confirmed, and its Release
// dropped the new grant's only hold, so another Client was granted the
// lock while the new lease was valid. The Client now ends a lease as
// TakenOver when a renewal answers a higher token than its own (a newer
// grant of its owner, Lease.superseded), and its Release then sends
// nothing. Renewals and releases now also name the grant (its token), so
// a Release made before that renewal drops nothing either
// (TestStrangerAdminForceReleasedOwnerReleasesFirst).
func TestStrangerAdminForceReleasedOwnerReacquired(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, _ func() engine.Engine) {
		ctx := strangerCtx(t, 60*time.Second)
		for _, kind := range []string{"mutex", "semaphore"} {
			name := "reacquired-" + kind
			acquire := func(c *distlock.Client, opts ...distlock.Option) (*distlock.Lease, error) {
				opts = append(opts, distlock.WithTTL(3*time.Second))
				if kind == "semaphore" {
					return c.Semaphore(name, 1).TryAcquire(ctx, opts...)
				}
				return c.TryAcquire(ctx, name, opts...)
			}
			old, err := acquire(a, distlock.WithOwner("job-7"))
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := b.ForceRelease(ctx, name); err != nil || !ok {
				t.Fatalf("%s: ForceRelease: %v, %v", kind, ok, err)
			}
			renewed, err := acquire(a, distlock.WithOwner("job-7"))
			if err != nil {
				t.Fatalf("%s: the owner's new acquire: %v", kind, err)
			}
			if renewed.Token() <= old.Token() {
				t.Fatalf("%s: the new grant's token %d is not above %d", kind, renewed.Token(), old.Token())
			}
			// Renewals every second: the old lease hears at its next one.
			select {
			case <-old.Done():
				var le *distlock.LostError
				if !errors.As(old.Err(), &le) || le.Cause != distlock.TakenOver {
					t.Errorf("%s: the force-released lease: %v; want a *LostError TakenOver", kind, old.Err())
				}
			case <-time.After(time.Minute):
				t.Errorf("%s: the force-released lease was never told (still renewed a minute on, renewals every 1s)", kind)
			}
			if err := old.Release(ctx); err == nil {
				t.Errorf("%s: the force-released lease's Release succeeded", kind)
			}
			other, err := acquire(b)
			if other == nil && !errors.Is(err, distlock.ErrLocked) {
				t.Errorf("%s: another Client's try while the owner's new lease holds: %v; want ErrLocked", kind, err)
			}
			if other != nil && renewed.Err() == nil {
				t.Errorf("%s: another Client was granted the lock while the owner's new lease (token %d) is valid: both hold", kind, renewed.Token())
			}
			if other != nil {
				_ = other.Release(ctx)
			}
			_ = renewed.Release(ctx)
		}
	})
}

// TestStrangerAdminForceReleasedOwnerReleasesFirst: as
// TestStrangerAdminForceReleasedOwnerReacquired, but the force-released
// lease (a long ttl: no renewal comes first) is released before it has
// heard anything. The release named the owner only and dropped the newer
// grant's hold, so another Client was granted the lock beside the owner's
// valid new lease; it now names the old grant's token and drops nothing.
// A mutex, a semaphore's permit and an RW lock's read.
func TestStrangerAdminForceReleasedOwnerReleasesFirst(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, _ func() engine.Engine) {
		ctx := strangerCtx(t, 60*time.Second)
		for _, kind := range []string{"mutex", "semaphore", "rwlock"} {
			name := "released-first-" + kind
			acquire := func(c *distlock.Client, opts ...distlock.Option) (*distlock.Lease, error) {
				opts = append(opts, distlock.WithTTL(time.Minute))
				switch kind {
				case "semaphore":
					return c.Semaphore(name, 1).TryAcquire(ctx, opts...)
				case "rwlock":
					return c.RWMutex(name).TryRLock(ctx, opts...)
				}
				return c.TryAcquire(ctx, name, opts...)
			}
			old, err := acquire(a, distlock.WithOwner("job-8"))
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := b.ForceRelease(ctx, name); err != nil || !ok {
				t.Fatalf("%s: ForceRelease: %v, %v", kind, ok, err)
			}
			renewed, err := acquire(a, distlock.WithOwner("job-8"))
			if err != nil {
				t.Fatalf("%s: the owner's new acquire: %v", kind, err)
			}
			if err := old.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
				t.Errorf("%s: the force-released lease's Release: %v; want ErrNotHeld", kind, err)
			}
			if err := renewed.Err(); err != nil {
				t.Fatalf("%s: the owner's new lease after the old one's release: %v", kind, err)
			}
			info, err := b.Inspect(ctx, name)
			if err != nil || !info.Held || len(info.Holders) != 1 || info.Holders[0].Token != renewed.Token() {
				t.Errorf("%s: after the old lease's release: %+v, %v; want held by the new grant (token %d)", kind, info, err, renewed.Token())
			}
			var other *distlock.Lease
			if kind == "rwlock" { // a writer: readers share
				other, err = b.RWMutex(name).TryLock(ctx, distlock.WithTTL(time.Minute))
			} else {
				other, err = acquire(b)
			}
			if other == nil && !errors.Is(err, distlock.ErrLocked) {
				t.Errorf("%s: another Client's try while the owner's new lease holds: %v; want ErrLocked", kind, err)
			}
			if other != nil {
				t.Errorf("%s: another Client was granted the lock beside the owner's new lease (token %d)", kind, renewed.Token())
				_ = other.Release(ctx)
			}
			if err := renewed.Release(ctx); err != nil {
				t.Errorf("%s: the new lease's Release: %v", kind, err)
			}
		}
	})
}

// TestStrangerAdminLatchKeyDeletedWhileWaiting: a latch's count deleted
// by hand on Redis (DEL of distlock:{NAME}:latch, as an operator who takes
// `distlock leaks`' advice for an "other" key with no expiry, or a
// FLUSHALL) while a Wait waits: the count reads 0 at once, and the Wait
// must return although nothing was published. It waited until its context
// ended: Wait read the count only at a wake-up or a reconnect. It now
// reads it again every 5 s or so without one (latchRecheck).
func TestStrangerAdminLatchKeyDeletedWhileWaiting(t *testing.T) {
	srv := redistest.Start(t)
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	c := distlock.New(eng)
	t.Cleanup(func() { _ = c.Close() })
	ctx := strangerCtx(t, 60*time.Second)
	latch := c.CountDownLatch("deleted-latch")
	if ok, err := latch.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	done := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	go func() { done <- latch.Wait(wctx) }()
	// The Wait subscribes, then reads the count (2). (Should the delete
	// come before that read, the Wait returns at once: the test passes.)
	enginetest.WaitFor(t, 10*time.Second, "the Wait's subscription", func() bool {
		info, err := c.Inspect(ctx, "deleted-latch")
		return err == nil && info.Subscribers > 0
	})
	if err := srv.Del(ctx, redisengine.DefaultPrefix+"{deleted-latch}:latch"); err != nil {
		t.Fatal(err)
	}
	if n, err := latch.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count after the delete: %d, %v; want 0", n, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait with the count deleted (0): %v; want it to return nil before its context ends", err)
	}
}

// TestStrangerAdminForceReleaseServesQueueInOrder: a force-release of an
// election's leader, of a member of an AcquireAll set, and of a
// semaphore's holder (by owner), each with three fair waiters queued in
// turn behind it: the waiters are served in their arrival order, each
// token above the one before (the freed holder's included), the freed
// holder is told taken over, and the listing agrees with Inspect while
// they wait and once they are done. (Passes: recorded as checked.)
func TestStrangerAdminForceReleaseServesQueueInOrder(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, eng func() engine.Engine) {
		ctx := strangerCtx(t, 90*time.Second)
		const ttl = 3 * time.Second
		type held struct {
			lease *distlock.Lease
			done  func() <-chan struct{}
			err   func() error
		}
		cases := []struct {
			kind  string
			name  string
			hold  func(name string) held
			wait  func(name string) (*distlock.Lease, error)
			force func(name string, h held) error
		}{
			{"election", "q-election", func(name string) held {
				ld, err := a.Campaign(ctx, name, "first", distlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				return held{ld.Lease(), ld.Done, ld.Err}
			}, func(name string) (*distlock.Lease, error) {
				ld, err := b.Campaign(ctx, name, "next", distlock.WithFair())
				if err != nil {
					return nil, err
				}
				return ld.Lease(), nil
			}, func(name string, _ held) error {
				_, err := b.ForceRelease(ctx, name)
				return err
			}},
			{"set member", "q-set-b", func(name string) held {
				set, err := a.AcquireAll(ctx, []string{"q-set-a", name}, distlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = set.Release(context.Background()) })
				return held{set.Lease(name), set.Done, set.Err}
			}, func(name string) (*distlock.Lease, error) {
				return b.Acquire(ctx, name, distlock.WithFair())
			}, func(name string, h held) error {
				return b.ForceReleaseHolder(ctx, name, h.lease.Owner())
			}},
			{"semaphore holder", "q-sem", func(name string) held {
				l, err := a.Semaphore(name, 2).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				return held{l, l.Done, l.Err}
			}, func(name string) (*distlock.Lease, error) {
				return b.Semaphore(name, 2).Acquire(ctx, distlock.WithWeight(2), distlock.WithFair())
			}, func(name string, h held) error {
				return b.ForceReleaseHolder(ctx, name, h.lease.Owner())
			}},
		}
		lister := eng().(engine.Lister)
		for _, tc := range cases {
			h := tc.hold(tc.name)
			type served struct {
				i     int
				token uint64
			}
			order := make(chan served, 3)
			next := make(chan struct{}) // one waiter holds at a time, in turn
			for i := range 3 {
				go func() {
					l, err := tc.wait(tc.name)
					if err != nil {
						t.Errorf("%s: waiter %d: %v", tc.kind, i, err)
						order <- served{i: -1}
						return
					}
					order <- served{i, l.Token()}
					<-next
					_ = l.Release(ctx)
				}()
				enginetest.WaitFor(t, 10*time.Second, tc.kind+": the waiter queued", func() bool {
					info, err := a.Inspect(ctx, tc.name)
					return err == nil && info.Waiters == i+1
				})
			}
			info, _ := a.Inspect(ctx, tc.name)
			if listed := listedInfo(t, ctx, lister, tc.name); listed == nil || listed.Held != info.Held || listed.Waiters != info.Waiters {
				t.Errorf("%s: listed %+v, Inspect %+v", tc.kind, listed, info)
			}
			if err := tc.force(tc.name, h); err != nil {
				t.Fatalf("%s: force-release: %v", tc.kind, err)
			}
			last := h.lease.Token()
			for want := range 3 {
				s := <-order
				if s.i != want {
					t.Errorf("%s: waiter %d served %d-th; want arrival order", tc.kind, s.i, want)
				}
				if s.token <= last {
					t.Errorf("%s: waiter %d's token %d not above %d", tc.kind, s.i, s.token, last)
				}
				last = s.token
				next <- struct{}{}
			}
			select {
			case <-h.done():
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the freed holder not told", tc.kind)
			}
			var le *distlock.LostError
			if !errors.As(h.err(), &le) || le.Cause != distlock.TakenOver {
				t.Errorf("%s: the freed holder: %v; want a *LostError TakenOver", tc.kind, h.err())
			}
			enginetest.WaitFor(t, 10*time.Second, tc.kind+": free and unlisted", func() bool {
				info, err := a.Inspect(ctx, tc.name)
				return err == nil && !info.Held && info.Waiters == 0 && listedInfo(t, ctx, lister, tc.name) == nil
			})
		}
	})
}

// listedInfo returns name's entry in the engine's listing (all pages), or
// nil.
func listedInfo(t *testing.T, ctx context.Context, l engine.Lister, name string) *engine.Info {
	t.Helper()
	cursor := ""
	for {
		infos, next, err := l.List(ctx, name, cursor, 1)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for i := range infos {
			if infos[i].Name == name {
				return &infos[i]
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// TestStrangerAdminTokensAcrossKinds: one name taken in turn as a mutex
// left to expire, a semaphore's permits (one freed by owner, then all by
// ForceRelease), an election, a member of an AcquireAll set
// (force-released), a re-entered mutex; and a second name as an RWMutex's
// readers and writer between mutexes: every grant's token is above every
// earlier grant's of the name (re-entry keeps its token). (Passes:
// recorded as checked.)
func TestStrangerAdminTokensAcrossKinds(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, _ func() engine.Engine) {
		ctx := strangerCtx(t, 60*time.Second)
		last := map[string]uint64{}
		grant := func(what, name string, tok uint64, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if tok <= last[name] {
				t.Errorf("%s: token %d not above %d", what, tok, last[name])
			}
			last[name] = tok
		}
		free := func(name string) {
			t.Helper()
			enginetest.WaitFor(t, 10*time.Second, name+" free", func() bool {
				info, err := b.Inspect(ctx, name)
				return err == nil && !info.Held
			})
		}
		const n, rw = "tokens", "tokens-rw"
		m, err := a.Acquire(ctx, n, distlock.WithTTL(100*time.Millisecond), distlock.WithAutoRenew(false))
		grant("mutex", n, m.Token(), err)
		free(n) // expired
		s1, err := a.Semaphore(n, 3).Acquire(ctx)
		grant("permit 1", n, s1.Token(), err)
		s2, err := b.Semaphore(n, 3).Acquire(ctx, distlock.WithWeight(2))
		grant("permit 2", n, s2.Token(), err)
		if err := b.ForceReleaseHolder(ctx, n, s1.Owner()); err != nil {
			t.Fatal(err)
		}
		s3, err := a.Semaphore(n, 3).Acquire(ctx)
		grant("permit 3", n, s3.Token(), err)
		if ok, err := b.ForceRelease(ctx, n); err != nil || !ok {
			t.Fatalf("ForceRelease: %v, %v", ok, err)
		}
		ld, err := a.Campaign(ctx, n, "v")
		if err != nil {
			t.Fatal(err)
		}
		grant("election", n, ld.Term(), nil)
		if err := ld.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		set, err := b.AcquireAll(ctx, []string{n, rw})
		if err != nil {
			t.Fatal(err)
		}
		grant("set member", n, set.Token(n), nil)
		grant("set member", rw, set.Token(rw), nil)
		if ok, err := a.ForceRelease(ctx, n); err != nil || !ok {
			t.Fatalf("ForceRelease of the set's member: %v, %v", ok, err)
		}
		r1, err := a.Acquire(ctx, n, distlock.WithOwner("twice"))
		grant("mutex", n, r1.Token(), err)
		r2, err := a.Acquire(ctx, n, distlock.WithOwner("twice"))
		if err != nil || r2.Token() != r1.Token() {
			t.Errorf("re-entry: token %d, %v; want %d", r2.Token(), err, r1.Token())
		}
		_ = r2.Release(ctx)
		_ = r1.Release(ctx)
		_ = set.Release(ctx)
		free(rw)
		rd1, err := a.RWMutex(rw).RLock(ctx)
		grant("reader 1", rw, rd1.Token(), err)
		rd2, err := b.RWMutex(rw).RLock(ctx)
		grant("reader 2", rw, rd2.Token(), err)
		if ok, err := b.ForceRelease(ctx, rw); err != nil || !ok {
			t.Fatalf("ForceRelease of the readers: %v, %v", ok, err)
		}
		w, err := b.RWMutex(rw).Lock(ctx)
		grant("writer", rw, w.Token(), err)
		_ = w.Release(ctx)
		mm, err := a.Semaphore(n, 3).TryAcquire(ctx)
		grant("permit after all", n, mm.Token(), err)
		_ = mm.Release(ctx)
	})
}
