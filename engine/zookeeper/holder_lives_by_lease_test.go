package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// The holder's node lives by its lease (its mtime plus its ttl), not by
// the session of the engine that made the grant: a grant outlives the
// process that made it, as on Redis and etcd (the CLI's `distlock acquire`
// exits and hands its lease to a shell script; a process hands its lease
// to another by owner, Attach, or shares it by re-entry).

// dialOwn returns an engine on a connection of its own that the test
// closes itself (as a process that exits keeping its leases: its Client is
// not closed, which would release them); a cleanup closes it too.
func dialOwn(t *testing.T, servers []string) *zkengine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := zkengine.Dial(ctx, servers, testSession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// uniqueName returns a lock name no other run of the test used on the
// shared ensemble.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// TestAttachedLeaseOutlivesAcquirer: process A acquires and hands its
// owner to process B (Attach); A's engine closes (A exits). B's lease is
// live until its deadline: nobody else is granted the lock meanwhile, B
// renews and releases it, and then it is free at once.
func TestAttachedLeaseOutlivesAcquirer(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := uniqueName("attach-outlives")
	aeng := dialOwn(t, ens.Servers())
	a := distlock.New(aeng)
	la, err := a.Acquire(ctx, name, distlock.WithTTL(10*time.Second), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	b := distlock.New(dial(t, ens.Servers()))
	defer b.Close()
	lb, err := b.Attach(ctx, name, la.Owner(), distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = aeng.Close() // A exits, keeping the lease it handed on
	c := distlock.New(dial(t, ens.Servers()))
	defer c.Close()
	if lc, err := c.TryAcquire(ctx, name, distlock.WithTTL(5*time.Second)); err == nil {
		t.Fatalf("C granted %q (token %d) after A's engine closed, while B's attached lease is live (%v before its deadline)",
			name, lc.Token(), time.Until(lb.Deadline()).Round(time.Millisecond))
	} else if !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("C's TryAcquire: %v, want ErrLocked", err)
	}
	if err := lb.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("B's renewal after A's engine closed: %v", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("B's release: %v", err)
	}
	lc, err := c.TryAcquire(ctx, name, distlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatalf("C after B's release: %v", err)
	}
	if lc.Token() <= lb.Token() {
		t.Errorf("C's token %d not above B's %d", lc.Token(), lb.Token())
	}
	_ = lc.Release(ctx)
}

// TestReentrantOwnerOutlivesFirstProcess: two processes hold the lock by
// one explicit owner (re-entry); the one whose grant made the node
// releases its hold and exits. The other still holds until its deadline.
func TestReentrantOwnerOutlivesFirstProcess(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := uniqueName("reentry-outlives")
	owner := "owner-" + name
	aeng := dialOwn(t, ens.Servers())
	a := distlock.New(aeng)
	la, err := a.Acquire(ctx, name, distlock.WithTTL(10*time.Second), distlock.WithOwner(owner))
	if err != nil {
		t.Fatal(err)
	}
	b := distlock.New(dial(t, ens.Servers()))
	defer b.Close()
	lb, err := b.Acquire(ctx, name, distlock.WithTTL(10*time.Second), distlock.WithOwner(owner))
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	_ = aeng.Close()
	in, err := b.Inspect(ctx, name)
	if err != nil || !in.Held || in.Owner != owner || in.Count != 1 {
		t.Fatalf("after A released its hold and exited: %+v, %v; want held by %q once", in, err, owner)
	}
	c := distlock.New(dial(t, ens.Servers()))
	defer c.Close()
	if lc, err := c.TryAcquire(ctx, name, distlock.WithTTL(5*time.Second)); err == nil {
		t.Fatalf("C granted %q (token %d) while B's re-entered hold is live (%v before its deadline)",
			name, lc.Token(), time.Until(lb.Deadline()).Round(time.Millisecond))
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHolderGoneWaiterGrantedAtTTL: a holder's process exits without
// releasing (its engine closed, its Client not: the lease kept, as the
// CLI's acquire does). No other client is granted the lock before the
// lease's deadline; a waiter queued before the exit is granted once the
// ttl passed (by its timer at the holder's expiry: nothing deletes the
// node), within about a renewal interval of the deadline; the expired
// holder's node is removed by the waiter's reading (no leak left).
func TestHolderGoneWaiterGrantedAtTTL(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%dmembers", n), func(t *testing.T) {
			t.Parallel()
			ens := shared(t, n)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name := uniqueName("holder-gone")
			const ttl = 3 * time.Second
			heng := dialOwn(t, ens.Servers())
			holder := distlock.New(heng)
			lh, err := holder.Acquire(ctx, name, distlock.WithTTL(ttl), distlock.WithAutoRenew(false))
			if err != nil {
				t.Fatal(err)
			}
			weng := dial(t, ens.Servers())
			waiter := distlock.New(weng)
			defer waiter.Close()
			type granted struct {
				l   *distlock.Lease
				at  time.Time
				err error
			}
			got := make(chan granted, 1)
			go func() {
				l, err := waiter.Acquire(ctx, name, distlock.WithTTL(ttl))
				got <- granted{l, time.Now(), err}
			}()
			waitUntil(t, 20*time.Second, "the waiter queued", func() bool {
				in, err := waiter.Inspect(ctx, name)
				return err == nil && in.Waiters == 1
			})
			_ = heng.Close() // the holder's process exits, keeping its lease
			other := distlock.New(dial(t, ens.Servers()))
			defer other.Close()
			if l, err := other.TryAcquire(ctx, name, distlock.WithTTL(ttl)); err == nil {
				t.Fatalf("another client granted %q (token %d) %v before the deadline of the lease its holder kept",
					name, l.Token(), time.Until(lh.Deadline()).Round(time.Millisecond))
			}
			var g granted
			select {
			case g = <-got:
			case <-ctx.Done():
				t.Fatal("the waiter was never granted the lock its holder left behind")
			}
			if g.err != nil {
				t.Fatal(g.err)
			}
			defer g.l.Release(ctx)
			late := g.at.Sub(lh.Deadline())
			t.Logf("the waiter granted %v after the abandoned lease's deadline", late.Round(time.Millisecond))
			if late < 0 {
				t.Errorf("the waiter granted %v before the abandoned lease's deadline", -late)
			}
			if bound := ttl/3 + 2*time.Second; late > bound {
				t.Errorf("the waiter granted %v after the abandoned lease's deadline, want within %v (a renewal interval and slack)", late, bound)
			}
			if g.l.Token() <= lh.Token() {
				t.Errorf("the waiter's token %d not above the holder's %d", g.l.Token(), lh.Token())
			}
			if lk, _, err := weng.Leaks(ctx, name, time.Hour, "", 100); err != nil || len(lk) != 0 {
				t.Errorf("Leaks of %q once the waiter holds it: %+v, %v; want none (the expired holder removed)", name, lk, err)
			}
		})
	}
}

// TestExpiredHolderLeakAndCleanup: the node of a lease whose holder exited
// without releasing is expected while the lease lives (Leaks reports none),
// is reported once it expired and nobody read the line, is not a holder
// for Inspect and List then, and goes with the next reading of the line (an
// acquire), leaving no leak. A force-release's mark whose freed holder
// never renews again is not a leak until the freed lease's expiry, and goes
// with the next reading after it.
func TestExpiredHolderLeakAndCleanup(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ttl = time.Second
	prefix := uniqueName("expired-holder")
	abandoned, forced := prefix+"-abandoned", prefix+"-forced"
	heng := dialOwn(t, ens.Servers())
	holder := distlock.New(heng)
	la, err := holder.Acquire(ctx, abandoned, distlock.WithTTL(ttl), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := holder.Acquire(ctx, forced, distlock.WithTTL(ttl), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	admin := dial(t, ens.Servers())
	if held, err := admin.ForceRelease(ctx, forced); err != nil || !held {
		t.Fatalf("ForceRelease: %v, %v", held, err)
	}
	_ = heng.Close() // the holder exits: neither lease is renewed again
	if lk, _, err := admin.Leaks(ctx, prefix, time.Hour, "", 100); err != nil || len(lk) != 0 {
		t.Fatalf("Leaks while the abandoned lease and the mark live: %+v, %v; want none", lk, err)
	}
	// Past the deadlines, nobody reading the lines: the expired holder's
	// node and the mark are still there.
	waitUntil(t, 20*time.Second, "both past their expiry", func() bool {
		return time.Now().After(la.Deadline().Add(100*time.Millisecond)) && time.Now().After(lf.Deadline().Add(100*time.Millisecond))
	})
	if n := persistentKids(t, ens, abandoned) + persistentKids(t, ens, forced); n != 2 {
		t.Fatalf("%d persistent children under the two names past their expiries, want the holder's node and the mark", n)
	}
	if in, err := admin.Inspect(ctx, abandoned); err != nil || in.Held {
		t.Fatalf("Inspect of the expired holder's name: %+v, %v; want free", in, err)
	}
	if infos, _, err := admin.List(ctx, prefix, "", 100); err != nil || len(infos) != 0 {
		t.Fatalf("List: %+v, %v; want no held lock", infos, err)
	}
	// Leaks sweeps them (the engine's own, ended) and reports none; the
	// next reading of each line removes them too.
	if lk, _, err := admin.Leaks(ctx, prefix, time.Hour, "", 100); err != nil || len(lk) != 0 {
		t.Fatalf("Leaks past the expiries: %+v, %v; want none (swept)", lk, err)
	}
	if n := persistentKids(t, ens, abandoned) + persistentKids(t, ens, forced); n != 0 {
		t.Fatalf("%d persistent children left after Leaks swept the expired ones", n)
	}
	c := distlock.New(dial(t, ens.Servers()))
	defer c.Close()
	for _, n := range []string{abandoned, forced} {
		l, err := c.TryAcquire(ctx, n, distlock.WithTTL(5*time.Second))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if lk, _, err := admin.Leaks(ctx, prefix, time.Hour, "", 100); err != nil || len(lk) != 0 {
		t.Fatalf("Leaks after the lines were read again: %+v, %v; want none", lk, err)
	}
}

// TestForceReleaseMarkOutlivesAdmin: a force-release's mark stays when the
// admin's engine closes at once (the CLI's `distlock force-release`), so
// the freed holder's next renewal is told taken over, not expired; for
// every kind, the admin staying or leaving.
func TestForceReleaseMarkOutlivesAdmin(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	for _, adminStays := range []bool{true, false} {
		for _, kind := range []string{"mutex", "semaphore", "reader"} {
			t.Run(fmt.Sprintf("%s/adminStays=%v", kind, adminStays), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				holder := distlock.New(dial(t, ens.Servers()))
				defer holder.Close()
				name := uniqueName(fmt.Sprintf("mark-outlives-%s-%v", kind, adminStays))
				var l *distlock.Lease
				var err error
				switch kind {
				case "mutex":
					l, err = holder.Acquire(ctx, name, distlock.WithTTL(3*time.Second))
				case "semaphore":
					l, err = holder.Semaphore(name, 2).Acquire(ctx, distlock.WithTTL(3*time.Second))
				case "reader":
					l, err = holder.RWMutex(name).RLock(ctx, distlock.WithTTL(3*time.Second))
				}
				if err != nil {
					t.Fatal(err)
				}
				aeng := dialOwn(t, ens.Servers())
				held, err := aeng.ForceRelease(ctx, name)
				if err != nil || !held {
					t.Fatalf("force-release: %v, %v", held, err)
				}
				if !adminStays {
					_ = aeng.Close()
				}
				select {
				case <-l.Done():
				case <-ctx.Done():
					t.Fatal("the freed holder was never told")
				}
				var lost *distlock.LostError
				if !errors.As(l.Err(), &lost) {
					t.Fatalf("the freed holder's error: %v, want a *LostError", l.Err())
				}
				if lost.Cause != distlock.TakenOver {
					t.Errorf("the freed holder lost its lease as %q, want %q", lost.Cause, distlock.TakenOver)
				}
				if lk, _, err := dial(t, ens.Servers()).Leaks(ctx, name, time.Hour, "", 100); err != nil || len(lk) != 0 {
					t.Errorf("Leaks after the holder read its mark: %+v, %v; want none (the mark taken)", lk, err)
				}
			})
		}
	}
}

// TestReleaseOfOtherSharedKind: a semaphore's permit released as an RW
// lock's hold, or a reader's as a semaphore's, changes nothing and is
// answered with the kind's *engine.ArgumentError, the one an acquire of
// the wrong kind gets (engine.KindError).
func TestReleaseOfOtherSharedKind(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := dial(t, ens.Servers())
	for _, k := range []struct{ held, asked engine.Kind }{{engine.Semaphore, engine.RWLock}, {engine.RWLock, engine.Semaphore}} {
		name := uniqueName("release-other-kind-" + k.held.String())
		limit := func(k engine.Kind) int {
			if k == engine.RWLock {
				return engine.RWPermits
			}
			return 2
		}
		r := engine.AcquireRequest{Name: name, Owner: "o-" + name, Attempt: "a-" + name, TTL: 10 * time.Second, Kind: k.held, Weight: 1, Limit: limit(k.held)}
		g, err := e.Acquire(ctx, r)
		if err != nil || !g.Acquired {
			t.Fatalf("%v: %+v, %v", k.held, g, err)
		}
		_, acqErr := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "x-" + name, TTL: 10 * time.Second, Kind: k.asked, Weight: 1, Limit: limit(k.asked)})
		var want *engine.ArgumentError
		if !errors.As(acqErr, &want) {
			t.Fatalf("an acquire of the other kind: %v, want an *engine.ArgumentError", acqErr)
		}
		for _, once := range []bool{false, true} {
			rq := engine.ReleaseRequest{Name: name, Owner: r.Owner, Kind: k.asked}
			var res engine.ReleaseResult
			if once {
				res, err = e.ReleaseOnce(ctx, rq, "id-"+name)
			} else {
				res, err = e.Release(ctx, rq)
			}
			var got *engine.ArgumentError
			if !errors.As(err, &got) || got.Error() != engine.KindError(name, k.held, k.asked).Error() {
				t.Errorf("%v released as %v (once %v): %+v, %v; want %v", k.held, k.asked, once, res, err, engine.KindError(name, k.held, k.asked))
			}
			in, err := e.Inspect(ctx, name)
			if err != nil || !in.Held || len(in.Holders) != 1 || in.Holders[0].Owner != r.Owner {
				t.Fatalf("after the release of the other kind: %+v, %v; want still held by %q", in, err, r.Owner)
			}
		}
		if res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: r.Owner, Kind: k.held}); err != nil || res.Status != engine.Released {
			t.Fatalf("the release of its own kind: %+v, %v", res, err)
		}
	}
}

// persistentKids counts the persistent children under name's node (the
// holders' nodes and force-release marks), read with a connection of the
// test's own.
func persistentKids(t *testing.T, ens *zktest.Ensemble, name string) int {
	t.Helper()
	raw := currentConn(t, ens.Servers())
	defer raw.Close()
	path := "/distlock/l-" + url.PathEscape(name)
	kids, _, err := raw.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range kids {
		if _, st, err := raw.Get(path + "/" + k); err == nil && st.EphemeralOwner == 0 {
			n++
		}
	}
	return n
}
