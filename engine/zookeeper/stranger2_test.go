package zookeeper_test

// Acceptance tests by a stranger to the ZooKeeper engine: the public API
// (a Client on zkengine.Dial) against members this package's harness
// starts, mixing kinds on one name, with sessions that expire under shared
// holders and waiters, and a member stopped and restarted. The conformance
// suite's cases are not repeated here (enginetest's ServerStopped, run on
// etcd and PostgreSQL, runs here on ZooKeeper).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/internal/stallproxy"
)

// TestStrangerMemberRestartsAndStops runs, on a member of its own (the
// shared ones serve parallel tests), the cases a whole server's stop and
// restart make: the member stopped past the ttls with a waiter of each
// kind (enginetest.ServerStopped); the member restarted under a
// semaphore's and an RW lock's holders with waiters; calls given up, and
// releases sent, while it is stopped.
func TestStrangerMemberRestartsAndStops(t *testing.T) {
	ens := zktest.Start(t, 1)
	m := ens.Members[0]
	restart := func() {
		m.Restart()
		ens.WaitReady(60 * time.Second)
	}
	client := func(t *testing.T) *distlock.Client {
		c := distlock.New(dial(t, ens.Servers()))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// enginetest.TokensAcrossRestarts passed here too (once, 34 s: its
	// force-released holders of the default ttl are told at their next
	// renewal); left out to keep the package's tests fast.
	t.Run("ServerStopped", func(t *testing.T) {
		enginetest.ServerStopped(t, client(t), client(t), func() func() {
			m.Stop()
			return m.Cont
		})
	})
	t.Run("SharedHoldersAcrossRestart", func(t *testing.T) {
		sharedHoldersAcrossRestart(t, client, restart)
	})
	t.Run("CallsDuringStop", func(t *testing.T) {
		callsDuringStop(t, client, m)
	})
	t.Run("ObserveAcrossRestarts", func(t *testing.T) {
		// Under the leader and between leaders: the watches set again on
		// reconnection.
		restartAt := func(int) { restart() }
		enginetest.ObserveAcrossRestarts(t, client, 2, 20*time.Second, restartAt, restartAt)
	})
}

// callsDuringStop: with the member stopped (SIGSTOP), an acquire of each
// kind that gives up (its context ends) while its request waits in the
// stopped member, and a release sent while it is stopped. Once the member
// continues, the given-up request's grant (it takes effect) is undone in
// the background: another Client is granted well before that grant's ttl;
// the release completes (sent again until the release timeout) and frees
// the lock.
func callsDuringStop(t *testing.T, client func(*testing.T) *distlock.Client, m *zktest.Member) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const ttl = 40 * time.Second // far beyond the bounds checked here
	type take func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error)
	kinds := []struct {
		name string
		take take
	}{
		{"mutex", func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.TryAcquire(ctx, name, distlock.WithTTL(ttl))
		}},
		{"semaphore", func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.Semaphore(name, 2).TryAcquire(ctx, distlock.WithTTL(ttl), distlock.WithWeight(2))
		}},
		{"writer", func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.RWMutex(name).TryLock(ctx, distlock.WithTTL(ttl))
		}},
	}
	b := client(t)
	for _, k := range kinds {
		name := "stop-given-up-" + k.name
		a := client(t)
		// Warm: the name's nodes exist and A's connection is up.
		l, err := k.take(a, ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		m.Stop()
		actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
		l, err = k.take(a, actx, name)
		acancel()
		m.Cont()
		if err == nil {
			t.Fatalf("%s: granted with the member stopped (token %d)", k.name, l.Token())
		}
		// Close waits for the given-up request's answer and undoes its
		// grant: then the lock is free at once, not after its ttl.
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		l, err = k.take(b, ctx, name)
		if err != nil {
			t.Fatalf("%s: after the given-up request was settled: %v", k.name, err)
		}
		_ = l.Release(ctx)
	}
	a := client(t)
	for _, k := range kinds {
		name := "stop-release-" + k.name
		l, err := k.take(a, ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		m.Stop()
		released := make(chan error, 1)
		go func() { released <- l.Release(ctx) }()
		// The fault's length: the release waits a second in the stopped
		// member (within the release timeout, 5 s).
		time.Sleep(time.Second)
		m.Cont()
		if err := <-released; err != nil {
			t.Fatalf("%s: release across the stop: %v", k.name, err)
		}
		l, err = k.take(b, ctx, name)
		if err != nil {
			t.Fatalf("%s: after the release returned: %v", k.name, err)
		}
		_ = l.Release(ctx)
	}
}

// sharedHoldersAcrossRestart: a semaphore (limit 2) with two holders and a
// waiter, an RW lock with two readers and a waiting writer, and the member
// restarted: no permit beyond the limit and no writer beside a reader at
// any time (a holder counts until it leaves or is told of its loss), the
// waiters granted once the holders leave, their tokens above the holders'.
func sharedHoldersAcrossRestart(t *testing.T, client func(*testing.T) *distlock.Client, restart func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const ttl = 10 * time.Second
	type lockOf func(c *distlock.Client, weight int) (*distlock.Lease, error)
	sem := func(c *distlock.Client, weight int) (*distlock.Lease, error) {
		return c.Semaphore("restart-sem", 2).Acquire(ctx, distlock.WithTTL(ttl), distlock.WithWeight(weight))
	}
	rw := func(c *distlock.Client, weight int) (*distlock.Lease, error) {
		if weight == 2 {
			return c.RWMutex("restart-rw").Lock(ctx, distlock.WithTTL(ttl))
		}
		return c.RWMutex("restart-rw").RLock(ctx, distlock.WithTTL(ttl))
	}
	type side struct {
		name    string
		occ     *occupancy
		holders []*distlock.Lease
		got     chan *distlock.Lease
		watch   *distlock.Client
	}
	var sides []*side
	for _, k := range []struct {
		name string
		take lockOf
	}{{"restart-sem", sem}, {"restart-rw", rw}} {
		s := &side{name: k.name, occ: newOccupancy(t, k.name, 2, false), got: make(chan *distlock.Lease, 1), watch: client(t)}
		for range 2 {
			l, err := k.take(client(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			s.occ.enter(l, 1)
			s.holders = append(s.holders, l)
		}
		wc := client(t)
		go func() {
			l, err := k.take(wc, 2)
			if err != nil {
				t.Errorf("%s: the waiter: %v", k.name, err)
				s.got <- nil
				return
			}
			s.occ.enter(l, 2)
			s.got <- l
		}()
		waitUntil(t, 20*time.Second, k.name+"'s waiter to queue", func() bool {
			info, err := s.watch.Inspect(ctx, k.name)
			return err == nil && info.Waiters == 1
		})
		sides = append(sides, s)
	}
	restart()
	for _, s := range sides {
		select {
		case l := <-s.got:
			t.Fatalf("%s: the waiter granted (token %d) while two holders hold", s.name, l.Token())
		default:
		}
		for _, h := range s.holders {
			if err := h.Err(); err != nil {
				t.Logf("%s: holder of token %d lost across the restart: %v", s.name, h.Token(), err)
			}
			s.occ.leave(h)
			if err := h.Release(ctx); err != nil && !errors.Is(err, distlock.ErrLeaseLost) {
				t.Errorf("%s: release after the restart: %v", s.name, err)
			}
		}
	}
	for _, s := range sides {
		select {
		case l := <-s.got:
			if l == nil {
				continue
			}
			for _, h := range s.holders {
				if l.Token() <= h.Token() {
					t.Errorf("%s: the waiter's token %d not above the holder's %d", s.name, l.Token(), h.Token())
				}
			}
			s.occ.leave(l)
			_ = l.Release(ctx)
		case <-ctx.Done():
			t.Fatalf("%s: the waiter never granted after the holders released", s.name)
		}
	}
}

// TestStrangerSharedHolderSessionExpired: a shared holder cut off from the
// ensemble (its session's heartbeats stop; its ttl is its session's) with
// a waiter for all the permits: a semaphore's permit, and an RW lock's
// reader with a writer waiting. The waiter is granted only after the
// holder was told of its loss, with a higher token.
func TestStrangerSharedHolderSessionExpired(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	for _, kind := range []string{"semaphore", "rw"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name := fresh("stranger-cut-shared-" + kind)
			p := startProxy(t, ens.Servers()[0])
			he := dialShort(t, p.Addr())
			holder := distlock.New(he)
			t.Cleanup(func() { _ = holder.Close() })
			other := distlock.New(dial(t, ens.Servers()))
			t.Cleanup(func() { _ = other.Close() })
			var l *distlock.Lease
			var err error
			if kind == "semaphore" {
				l, err = holder.Semaphore(name, 2).Acquire(ctx, distlock.WithTTL(he.SessionTimeout()))
			} else {
				l, err = holder.RWMutex(name).RLock(ctx, distlock.WithTTL(he.SessionTimeout()))
			}
			if err != nil {
				t.Fatal(err)
			}
			p.Freeze()
			var w *distlock.Lease
			if kind == "semaphore" {
				w, err = other.Semaphore(name, 2).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(5*time.Second))
			} else {
				w, err = other.RWMutex(name).Lock(ctx, distlock.WithTTL(5*time.Second))
			}
			granted := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Release(ctx)
			select {
			case <-l.Done():
			default:
				t.Fatalf("granted all the permits while the cut-off holder was not told (its deadline %v from now)", time.Until(l.Deadline()))
			}
			var lost *distlock.LostError
			if !errors.As(l.Err(), &lost) || !lost.At.Before(granted) {
				t.Fatalf("holder's loss %v not before the grant at %v", l.Err(), granted)
			}
			if w.Token() <= l.Token() {
				t.Fatalf("token after the loss %d not above %d", w.Token(), l.Token())
			}
		})
	}
}

// TestStrangerSharedWaiterSessionExpired: a shared lock's waiter that
// keeps the ones behind it out (a writer behind a reader, before another
// reader; a semaphore request for every permit before a request for one)
// loses its session while it waits: the one behind it is granted beside
// the holder without waiting for the holder's release, and the expired
// waiter's wait ends with ErrSessionExpired.
func TestStrangerSharedWaiterSessionExpired(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	for _, kind := range []string{"semaphore", "rw"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name := fresh("stranger-expired-shared-waiter-" + kind)
			take := func(c *distlock.Client, ctx context.Context, big bool) (*distlock.Lease, error) {
				switch {
				case kind == "rw" && big:
					return c.RWMutex(name).Lock(ctx, distlock.WithTTL(shortSession))
				case kind == "rw":
					return c.RWMutex(name).RLock(ctx)
				case big:
					return c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(3), distlock.WithTTL(shortSession))
				default:
					return c.Semaphore(name, 3).Acquire(ctx)
				}
			}
			holder := distlock.New(dial(t, ens.Servers()))
			t.Cleanup(func() { _ = holder.Close() })
			h, err := take(holder, ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			waiters := func() int {
				info, err := holder.Inspect(ctx, name)
				if err != nil {
					return -1
				}
				return info.Waiters
			}
			p := startProxy(t, ens.Servers()[0])
			front := distlock.New(dialShort(t, p.Addr()))
			t.Cleanup(func() { _ = front.Close() })
			ferr := make(chan error, 1)
			go func() {
				l, err := take(front, ctx, true)
				if err == nil {
					_ = l.Release(ctx)
				}
				ferr <- err
			}()
			waitUntil(t, 20*time.Second, "the front waiter to queue", func() bool { return waiters() == 1 })
			behind := distlock.New(dial(t, ens.Servers()))
			t.Cleanup(func() { _ = behind.Close() })
			got := make(chan error, 1)
			go func() {
				l, err := take(behind, ctx, false)
				if err == nil {
					_ = l.Release(ctx)
				}
				got <- err
			}()
			waitUntil(t, 20*time.Second, "the waiter behind to queue", func() bool { return waiters() == 2 })
			p.Freeze()
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("the waiter behind the expired one: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the waiter behind one whose session expired still waits after 30 s (waiters %d)", waiters())
			}
			if h.Err() != nil {
				t.Fatalf("the holder lost its lease: %v", h.Err())
			}
			p.Thaw()
			select {
			case err := <-ferr:
				if !errors.Is(err, zkengine.ErrSessionExpired) {
					t.Fatalf("the waiter whose session expired: %v, want ErrSessionExpired", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the waiter whose session expired still waits after 30 s")
			}
		})
	}
}

// TestStrangerSharedTTLAboveSession: a semaphore's permit and an RW lock's
// reader asked with a ttl above the session timeout are refused with an
// *ArgumentError before anything is stored: the name then takes the other
// shared kind.
func TestStrangerSharedTTLAboveSession(t *testing.T) {
	t.Parallel()
	e := dial(t, shared(t, 1).Servers())
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	long := distlock.WithTTL(e.SessionTimeout() + time.Second)
	for _, first := range []string{"semaphore", "rw"} {
		name := fresh("stranger-shared-ttl-" + first)
		var err error
		if first == "semaphore" {
			_, err = c.Semaphore(name, 2).Acquire(ctx, long)
		} else {
			_, err = c.RWMutex(name).RLock(ctx, long)
		}
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("%s with a ttl above the session: %v, want ErrInvalidArgument", first, err)
		}
		var l *distlock.Lease
		if first == "semaphore" {
			l, err = c.RWMutex(name).TryLock(ctx)
		} else {
			l, err = c.Semaphore(name, 2).TryAcquire(ctx)
		}
		if err != nil {
			t.Fatalf("the other kind after the refused %s: %v (the refusal stored a kind)", first, err)
		}
		_ = l.Release(ctx)
	}
}

// TestStrangerHolderStalled: a holder's connection stalls (every byte
// held both ways, as a process stopped, or a network that delays without
// cutting) for longer than its ttl but well within its session, while a
// waiter of the same kind waits; then the stall ends and the held bytes
// (its renewals) arrive. The waiter is granted only after the holder was
// told of its loss (Done, Err, and its Context's cause a *LostError from
// before the grant), with a higher token; the holder's late renewals do
// not revive its lease, and the waiter still holds afterwards.
func TestStrangerHolderStalled(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	const ttl = 1500 * time.Millisecond
	for _, kind := range []string{"mutex", "semaphore", "reader-writer", "writer-reader"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name := fresh("stranger-stalled-" + kind)
			take := func(c *distlock.Client, first bool) (*distlock.Lease, error) {
				switch {
				case kind == "mutex":
					return c.Acquire(ctx, name, distlock.WithTTL(ttl))
				case kind == "semaphore":
					return c.Semaphore(name, 1).Acquire(ctx, distlock.WithTTL(ttl))
				case kind == "reader-writer" == first:
					return c.RWMutex(name).RLock(ctx, distlock.WithTTL(ttl))
				}
				return c.RWMutex(name).Lock(ctx, distlock.WithTTL(ttl))
			}
			p, err := stallproxy.Listen(ens.Servers()[0])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			holder := distlock.New(dial(t, []string{p.Addr()}))
			t.Cleanup(func() { _ = holder.Close() })
			other := distlock.New(dial(t, ens.Servers()))
			t.Cleanup(func() { _ = other.Close() })
			h, err := take(holder, true)
			if err != nil {
				t.Fatal(err)
			}
			p.Pause()
			resumed := false
			defer func() {
				if !resumed {
					p.Resume()
				}
			}()
			w, err := take(other, false)
			granted := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Release(ctx)
			select {
			case <-h.Done():
			default:
				t.Fatalf("granted while the stalled holder was not told (its deadline %v from now)", time.Until(h.Deadline()))
			}
			var lost *distlock.LostError
			if !errors.As(h.Err(), &lost) || !lost.At.Before(granted) {
				t.Fatalf("holder's loss %v not before the grant at %v", h.Err(), granted)
			}
			if !errors.As(context.Cause(h.Context()), &lost) || h.Context().Err() == nil {
				t.Fatalf("the holder's context: %v (cause %v), want cancelled with its *LostError", h.Context().Err(), context.Cause(h.Context()))
			}
			if w.Token() <= h.Token() {
				t.Fatalf("token after the loss %d not above %d", w.Token(), h.Token())
			}
			p.Resume()
			resumed = true
			// The held renewals arrive; then one round trip of the
			// holder's own (an Inspect behind them on its connection).
			if _, err := holder.Inspect(ctx, name); err != nil {
				t.Fatal(err)
			}
			if h.Err() == nil {
				t.Fatal("the holder's lease came back after its loss")
			}
			info, err := other.Inspect(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Holders) != 1 || info.Holders[0].Owner != w.Owner() || info.Token != w.Token() {
				t.Fatalf("after the stall ended: %+v, want the waiter alone holding (token %d)", info, w.Token())
			}
		})
	}
}

// TestStrangerShrinkUnderWaiter: a semaphore (limit 3) with one permit
// held, a request for all 3 queued (without a deadline) and a request for
// 1 behind it; then the limit is set to 2, so the head can never fit. A
// weight above the stored limit is an invalid argument (docs/API.md): the
// head is told so, and the request behind it is granted beside the holder,
// neither waiting for the holder's release. (The embedded engine and Redis
// do not: their head is not woken by a limit it does not fit, waits until
// its context ends, even after the lock is free, and keeps the request
// behind it waiting as long: reported, not theirs to fix here.)
func TestStrangerShrinkUnderWaiter(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	var cs []*distlock.Client
	for range 4 {
		c := distlock.New(dial(t, ens.Servers()))
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := fresh("stranger-shrink")
	h, err := cs[0].Semaphore(name, 3).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	type answer struct {
		l   *distlock.Lease
		err error
	}
	wait := func(c *distlock.Client, weight int) chan answer {
		ch := make(chan answer, 1)
		go func() {
			l, err := c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(weight))
			ch <- answer{l, err}
		}()
		return ch
	}
	queued := func(n int) {
		waitUntil(t, 20*time.Second, fmt.Sprintf("%d waiters", n), func() bool {
			info, err := cs[3].Inspect(ctx, name)
			return err == nil && info.Waiters == n
		})
	}
	big := wait(cs[1], 3)
	queued(1)
	small := wait(cs[2], 1)
	queued(2)
	if err := cs[3].Semaphore(name, 2).SetLimit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-big:
		if !errors.Is(a.err, distlock.ErrInvalidArgument) {
			t.Fatalf("the head for 3 permits of 2: %v, want an *ArgumentError", a.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the head for 3 permits of 2 still waits 20 s after the limit shrank, the holder holding")
	}
	select {
	case a := <-small:
		if a.err != nil {
			t.Fatalf("the request behind the refused head: %v", a.err)
		}
		if h.Err() != nil {
			t.Fatalf("the holder lost its permit: %v", h.Err())
		}
		_ = a.l.Release(ctx)
	case <-time.After(20 * time.Second):
		t.Fatal("the request for 1 permit of 2 (1 held) still waits 20 s after the head was refused")
	}
}

// TestStrangerKindsRace: on three members, two kinds asked at once on a
// fresh name by Clients whose sessions are on different members (a
// semaphore's SetLimit and a reader, a mutex and a reader, a writer and a
// semaphore's permit), round after round: exactly one succeeds, the other
// is refused as the wrong kind (an *ArgumentError), and once the winner
// leaves the name keeps the winner's kind (a mutex keeps none).
func TestStrangerKindsRace(t *testing.T) {
	t.Parallel()
	ens := shared(t, 3)
	a := distlock.New(dial(t, ens.Servers()[:1]))
	t.Cleanup(func() { _ = a.Close() })
	b := distlock.New(dial(t, ens.Servers()[1:2]))
	t.Cleanup(func() { _ = b.Close() })
	enginetest.KindsRace(t, a, b, enginetest.KindsRaceOptions{Rounds: 15, Semaphores: true})
}

// strangerNames counts the names fresh made in this process.
var strangerNames atomic.Int64

// fresh returns base made unique in this process and across processes:
// ZooKeeper keeps a shared lock's kind for good, and -count runs the
// tests again on the same ensemble.
func fresh(base string) string {
	return fmt.Sprintf("%s-%d-%d", base, os.Getpid(), strangerNames.Add(1))
}

// TestStrangerWaiterCutOffAndBack: a waiter's connection is cut (its
// session lives on: cut for less than its timeout) while the holder
// releases, or the latch it waits on reaches zero; then the connection
// comes back. The waiter goes on at once (its watch set again by the
// client library on reconnection, or its next attempt), not after the
// holder's ttl (a minute, far beyond the bound here).
func TestStrangerWaiterCutOffAndBack(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	const holderTTL = time.Minute
	for _, kind := range []string{"mutex", "writer", "permit", "latch"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name := fresh("stranger-cut-waiter-" + kind)
			holder := distlock.New(dial(t, ens.Servers()))
			t.Cleanup(func() { _ = holder.Close() })
			p := startProxy(t, ens.Servers()[0])
			waiter := distlock.New(dial(t, []string{p.Addr()}))
			t.Cleanup(func() { _ = waiter.Close() })
			var h *distlock.Lease
			var err error
			switch kind {
			case "mutex":
				h, err = holder.Acquire(ctx, name, distlock.WithTTL(holderTTL))
			case "writer":
				h, err = holder.RWMutex(name).RLock(ctx, distlock.WithTTL(holderTTL))
			case "permit":
				h, err = holder.Semaphore(name, 1).Acquire(ctx, distlock.WithTTL(holderTTL))
			case "latch":
				_, err = holder.CountDownLatch(name).TrySetCount(ctx, 1)
			}
			if err != nil {
				t.Fatal(err)
			}
			sent := p.Sent()
			done := make(chan error, 1)
			go func() {
				var l *distlock.Lease
				var err error
				switch kind {
				case "mutex":
					l, err = waiter.Acquire(ctx, name)
				case "writer":
					l, err = waiter.RWMutex(name).Lock(ctx)
				case "permit":
					l, err = waiter.Semaphore(name, 1).Acquire(ctx)
				case "latch":
					err = waiter.CountDownLatch(name).Wait(ctx)
				}
				if l != nil {
					_ = l.Release(ctx)
				}
				done <- err
			}()
			if kind == "latch" {
				// Its subscription is not visible to another session: wait
				// until Wait has sent its requests (it subscribes, then
				// reads the count; the engine's watches are set with the
				// first of them). Cut before its last, it reads after the
				// connection is back.
				waitUntil(t, 20*time.Second, "the latch's waiter to send", func() bool { return p.Sent() > sent })
			} else {
				waitUntil(t, 20*time.Second, "the waiter to queue", func() bool {
					info, err := holder.Inspect(ctx, name)
					return err == nil && info.Waiters == 1
				})
			}
			p.Freeze()
			if kind == "latch" {
				err = holder.CountDownLatch(name).CountDown(ctx)
			} else {
				err = h.Release(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				t.Fatalf("the cut-off waiter went on before its connection came back: %v", err)
			default:
			}
			p.Thaw()
			back := time.Now()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the waiter after its connection came back: %v", err)
				}
				t.Logf("went on %v after the connection came back", time.Since(back).Round(time.Millisecond))
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter still waits 20 s after its connection came back, the lock free")
			}
		})
	}
}

// TestStrangerAttachToSharedHolder: Attach rebuilds a mutex's lease, and
// is refused (an *ArgumentError) for the owner of a semaphore's permit or
// an RW lock's reader, changing nothing: the holder keeps its permit, and
// nobody else is granted it.
func TestStrangerAttachToSharedHolder(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	a := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = a.Close() })
	b := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, kind := range []string{"permit", "reader"} {
		name := fresh("stranger-attach-" + kind)
		var h *distlock.Lease
		var err error
		if kind == "permit" {
			h, err = a.Semaphore(name, 1).Acquire(ctx, distlock.WithTTL(10*time.Second))
		} else {
			h, err = a.RWMutex(name).RLock(ctx, distlock.WithTTL(10*time.Second))
		}
		if err != nil {
			t.Fatal(err)
		}
		att, err := b.Attach(ctx, name, h.Owner())
		if err == nil {
			// What the mutex's lease bound to the permit does: its
			// release frees the holder's permit.
			_ = att.Release(ctx)
		}
		var l *distlock.Lease
		var other error
		if kind == "permit" {
			l, other = b.Semaphore(name, 1).TryAcquire(ctx)
		} else {
			l, other = b.RWMutex(name).TryLock(ctx)
		}
		if other == nil {
			t.Fatalf("%s: granted beside the holder (token %d), after Attach answered %v (the holder: %v)", kind, l.Token(), err, h.Err())
		}
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("%s: Attach to its owner: %v, want an *ArgumentError", kind, err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatalf("%s: the holder's release: %v", kind, err)
		}
	}
}

// TestStrangerOddNames: names the one rule of every engine takes (slashes,
// dots, percent signs, spaces, multi-byte UTF-8 up to 512 bytes) are held
// as each kind on ZooKeeper as on the embedded engine, are told apart (a
// name and its escaped spelling are two locks), and List returns each
// exactly as given.
func TestStrangerOddNames(t *testing.T) {
	t.Parallel()
	e := dial(t, shared(t, 1).Servers())
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := fresh("stranger-odd")
	long := prefix + strings.Repeat("€", (512-len(prefix))/3)
	names := []string{prefix + "/a/b", prefix + "%2Fa%2Fb", prefix + "/..", prefix + ".", prefix + " x ", prefix + "ü?#&", long}
	var held []*distlock.Lease
	for i, name := range names {
		if err := distlock.ValidateName(name); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		var l *distlock.Lease
		var err error
		switch i % 3 {
		case 0:
			l, err = c.Acquire(ctx, name)
		case 1:
			l, err = c.Semaphore(name, 2).Acquire(ctx)
		default:
			l, err = c.RWMutex(name).RLock(ctx)
		}
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		held = append(held, l)
	}
	infos, _, err := e.List(ctx, prefix, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, info := range infos {
		if !info.Held {
			t.Errorf("%q listed not held", info.Name)
		}
		listed = append(listed, info.Name)
	}
	slices.Sort(listed)
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %q, want %q", listed, want)
	}
	for i, l := range held {
		info, err := c.Inspect(ctx, names[i])
		if err != nil || !info.Held || info.Token != l.Token() && (len(info.Holders) == 0 || info.Holders[0].Token != l.Token()) {
			t.Fatalf("%q: %+v, %v", names[i], info, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStrangerStoppedWaiterSkipped: a writer queued behind a reader (it
// keeps newer readers out) whose process stops (its connection stalls,
// every byte held: its heartbeats stop, its session lives on for now); a
// reader queued behind it is granted beside the holder once the stopped
// writer's place lapses (distlock.WaiterTTL), not after the holder leaves.
// When the writer's process continues, its wait goes on (a lapsed place is
// taken again, or its session's expiry ends it) and it is never granted
// beside the readers.
func TestStrangerStoppedWaiterSkipped(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := fresh("stranger-stopped-waiter")
	holder := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = holder.Close() })
	behind := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = behind.Close() })
	p, err := stallproxy.Listen(ens.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	stopped := distlock.New(dial(t, []string{p.Addr()}))
	t.Cleanup(func() { _ = stopped.Close() })
	h, err := holder.RWMutex(name).RLock(ctx, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waiters := func() int {
		info, err := holder.Inspect(ctx, name)
		if err != nil {
			return -1
		}
		return info.Waiters
	}
	type answer struct {
		l   *distlock.Lease
		err error
	}
	wgot := make(chan answer, 1)
	go func() {
		w, err := stopped.RWMutex(name).Lock(ctx)
		wgot <- answer{w, err}
	}()
	waitUntil(t, 20*time.Second, "the writer to queue", func() bool { return waiters() == 1 })
	rgot := make(chan *distlock.Lease, 1)
	go func() {
		r, err := behind.RWMutex(name).RLock(ctx)
		if err != nil {
			t.Errorf("the reader behind: %v", err)
		}
		rgot <- r
	}()
	waitUntil(t, 20*time.Second, "the reader to queue behind the writer", func() bool { return waiters() == 2 })
	p.Pause()
	stoppedAt := time.Now()
	var r *distlock.Lease
	select {
	case r = <-rgot:
		t.Logf("the reader behind granted %v after the writer stopped", time.Since(stoppedAt).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		p.Resume()
		t.Fatalf("the reader behind a stopped writer still waits 20 s later (waiters %d)", waiters())
	}
	if h.Err() != nil {
		t.Fatalf("the holder: %v", h.Err())
	}
	p.Resume()
	select {
	case w := <-wgot:
		if w.err == nil {
			t.Fatalf("the writer granted (token %d) beside two readers", w.l.Token())
		}
		t.Logf("the continued writer: %v", w.err)
		return
	default:
	}
	for _, l := range []*distlock.Lease{h, r} {
		if l != nil {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case w := <-wgot:
		if w.err != nil {
			t.Logf("the continued writer: %v", w.err)
			return
		}
		if w.l.Token() <= h.Token() || r != nil && w.l.Token() <= r.Token() {
			t.Errorf("the writer's token %d not above the readers'", w.l.Token())
		}
		_ = w.l.Release(ctx)
	case <-time.After(20 * time.Second):
		t.Fatal("the writer, continued, neither granted nor told 20 s after the readers left")
	}
}
