package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// staleRounds is the number of hand-offs staleRefusal makes, and
// backlogWrites the writes committed before each release while the
// follower is paused (applied by it, once resumed, before the release).
const (
	staleRounds   = 10
	backlogWrites = 200
)

// staleSetup is the fixture of the tests of a follower behind the leader:
// a client whose session is on one follower only (through a proxy that
// counts the bytes it sends), a client on the leader, and a raw
// connection to the leader for the backlog.
type staleSetup struct {
	follower *zktest.Member
	proxy    *proxy
	reader   *distlock.Client // through the follower
	holder   *distlock.Client // on the leader
	raw      *zk.Conn
}

// newStaleSetup makes the fixture on ens, once the fault before is over.
func newStaleSetup(t *testing.T, ens *zktest.Ensemble) *staleSetup {
	waitServing(t, ens, 2*time.Minute) // the fault before is over
	leader := leaderOf(t, ens)
	var follower *zktest.Member
	for _, m := range ens.Members {
		if m != leader {
			follower = m
			break
		}
	}
	t.Cleanup(follower.Cont) // resumed even when the test stops early
	p := startProxy(t, follower.Addr)
	reader := distlock.New(dial(t, []string{p.Addr()}))
	t.Cleanup(func() { _ = reader.Close() })
	holder := distlock.New(dial(t, []string{leader.Addr}))
	t.Cleanup(func() { _ = holder.Close() })
	raw, _, err := zk.Connect([]string{leader.Addr}, testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = raw.Delete(backlogPath, -1)
		raw.Close()
	})
	if _, err := raw.Create(backlogPath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	return &staleSetup{follower: follower, proxy: p, reader: reader, holder: holder, raw: raw}
}

// behind pauses the follower (SIGSTOP), commits the backlog (which the
// follower applies first once resumed) and then change through the
// leader, sends try through the follower (it waits in the paused member's
// socket) and resumes the follower: try's first read races the leader's
// commit of change. It returns try's answer. The pause is far below
// syncLimit (5 s): the follower stays in the quorum.
func (s *staleSetup) behind(t *testing.T, change func() error, try func() (*distlock.Lease, error)) (*distlock.Lease, error) {
	t.Helper()
	s.follower.Stop()
	paused := time.Now()
	backlog(t, s.raw)
	if err := change(); err != nil {
		s.follower.Cont()
		t.Fatalf("a change with the follower paused: %v", err)
	}
	sent := s.proxy.Sent()
	type answer struct {
		l   *distlock.Lease
		err error
	}
	got := make(chan answer, 1)
	go func() {
		l, err := try()
		got <- answer{l, err}
	}()
	waitUntil(t, 10*time.Second, "the try sent to the paused follower", func() bool { return s.proxy.Sent() > sent })
	s.follower.Cont()
	resumed := time.Now()
	a := <-got
	if d := time.Since(paused); d > 2*time.Second {
		// A slow round (one ran past a 10 s ttl at load 8): say where.
		t.Logf("paused %v, the try answered %v after the resume", resumed.Sub(paused), time.Since(resumed))
	}
	return a.l, a.err
}

// staleRefusal: a TryAcquire through a follower that is behind the leader
// is not refused a lock released a moment before through the leader.
// Each round the leader's client takes the lock, the follower's
// TryAcquire is refused (the lock is really held: the refusal path still
// refuses), and the try is sent again behind the release
// (staleSetup.behind). It must be granted: a refusal is answered only
// after a sync.
func staleRefusal(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStaleSetup(t, ens)
	reader, holder := s.reader, s.holder
	ttl := distlock.WithTTL(30 * time.Second) // a slow round is not a lost grant
	// Each kind of call that does not wait, on a name of its own: a
	// mutex's TryAcquire and a semaphore's (limit 1).
	kinds := []struct {
		name      string
		take, try func(context.Context, *distlock.Client, string) (*distlock.Lease, error)
	}{
		{"stale-refusal-mutex",
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.Acquire(ctx, n, ttl)
			},
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.TryAcquire(ctx, n, ttl)
			}},
		{"stale-refusal-semaphore",
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.Semaphore(n, 1).Acquire(ctx, ttl)
			},
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.Semaphore(n, 1).TryAcquire(ctx, ttl)
			}},
	}
	for _, k := range kinds {
		stale := 0
		for i := range staleRounds {
			h, err := k.take(ctx, holder, k.name)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := k.try(ctx, reader, k.name); !errors.Is(err, distlock.ErrLocked) {
				if l != nil {
					_ = l.Release(ctx)
				}
				t.Fatalf("%s round %d: a try while it is really held: %v, want ErrLocked", k.name, i, err)
			}
			l, err := s.behind(t, func() error { return h.Release(ctx) },
				func() (*distlock.Lease, error) { return k.try(ctx, reader, k.name) })
			switch {
			case errors.Is(err, distlock.ErrLocked):
				stale++
			case err != nil:
				t.Fatalf("%s round %d: the try after the release: %v", k.name, i, err)
			default:
				if err := l.Release(ctx); err != nil {
					t.Fatalf("%s round %d: release of the try's lease: %v", k.name, i, err)
				}
			}
		}
		if stale > 0 {
			t.Errorf("%s: %d of %d tries through the follower refused what was released before they were sent", k.name, stale, staleRounds)
		}
	}
}

// backlogPath is the node (outside the engine's root) staleRefusal's
// backlog writes.
const backlogPath = "/stale-refusal-backlog"

// backlog commits backlogWrites writes of backlogPath through c, sent
// together (the connection pipelines them).
func backlog(t *testing.T, c *zk.Conn) {
	t.Helper()
	errs := make(chan error, backlogWrites)
	for range backlogWrites {
		go func() {
			_, err := c.Set(backlogPath, []byte("backlog"), -1)
			errs <- err
		}()
	}
	for range backlogWrites {
		if err := <-errs; err != nil {
			t.Fatalf("a backlog write: %v", err)
		}
	}
}

// staleKindRecord: a shared lock's call refused because a mutex holds the
// name leaves no trace on it, even when its first read came from a
// follower that had not applied the mutex's grant yet (a refusal changes
// nothing: the embedded engine and every other engine store a shared
// lock's kind only when no mutex holds the name). Each round the leader's
// client takes a mutex on a fresh name while the follower's client sends
// (staleSetup.behind) a read try (an RW lock's) or a SetLimit (a
// semaphore's); it is refused, the mutex released, and a lock of the
// other shared kind must then be granted on the name: a kind record the
// refused call stored would refuse it. (SetLimit reads the ensemble's
// clock, a write, before its line, so its reading is current here; its
// check in the transaction is for a grant made between the two.)
func staleKindRecord(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStaleSetup(t, ens)
	ttl := distlock.WithTTL(30 * time.Second)
	calls := []struct {
		what      string
		refused   func(name string) (*distlock.Lease, error) // through the follower
		otherKind func(name string) (*distlock.Lease, error) // then, on the leader
	}{
		{"read try",
			func(name string) (*distlock.Lease, error) { return s.reader.RWMutex(name).TryRLock(ctx, ttl) },
			func(name string) (*distlock.Lease, error) { return s.holder.Semaphore(name, 1).TryAcquire(ctx, ttl) }},
		{"SetLimit",
			func(name string) (*distlock.Lease, error) {
				return nil, s.reader.Semaphore(name, 1).SetLimit(ctx, 2)
			},
			func(name string) (*distlock.Lease, error) { return s.holder.RWMutex(name).TryRLock(ctx, ttl) }},
	}
	left := 0
	for i := range staleRounds {
		c := calls[i%len(calls)]
		name := fmt.Sprintf("stale-kind-%d", i)
		var h *distlock.Lease
		l, err := s.behind(t, func() (err error) {
			h, err = s.holder.Acquire(ctx, name, ttl)
			return err
		}, func() (*distlock.Lease, error) { return c.refused(name) })
		if err == nil {
			if l != nil {
				_ = l.Release(ctx)
			}
			t.Fatalf("round %d: a %s beside a mutex: not refused", i, c.what)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		other, err := c.otherKind(name)
		if err != nil {
			t.Logf("round %d: after a refused %s, the other shared kind on the freed name: %v", i, c.what, err)
			left++
			continue
		}
		if err := other.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left > 0 {
		t.Errorf("%d of %d refused calls left their kind on the name (the other shared kind refused after the mutex left)", left, staleRounds)
	}
}

// staleLeave: the head of a line that leaves through a follower behind the
// release that reserved the lock for it passes the reservation on (the
// release recorded again in the name node, with the deletion of its
// place), as it does through the leader: the next head's reservation then
// counts from the leave, not from the release. Each round the leader's
// client holds the lock, two fair ghost waiters queue (the first through an
// engine on the follower, the second on the leader), and the first's Leave is sent through the follower behind
// the release (staleSetup.behind). Before the name node's version was
// checked with the plain deletion, a Leave that read the line before the
// release deleted the reserved head and left the next one the rest of the
// first's reservation.
func staleLeave(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStaleSetup(t, ens)
	onLeader := dial(t, []string{leaderOf(t, ens).Addr})
	onFollower := dial(t, []string{s.proxy.Addr()})
	stale := 0
	for i := range staleRounds {
		name := fmt.Sprintf("stale-leave-%d", i)
		h, err := s.holder.Acquire(ctx, name, distlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// The first queues through the follower's engine, which keeps its
		// place and leaves it; the second through the leader's.
		for _, g := range []struct {
			id string
			e  *zkengine.Engine
		}{{"ghost-first", onFollower}, {"ghost-second", onLeader}} {
			if _, err := g.e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: g.id, Attempt: g.id, TTL: time.Minute,
				Waiting: true, Waiter: g.id, WaiterTTL: time.Minute, Order: engine.OrderFair}); err != nil {
				t.Fatal(err)
			}
		}
		path := zkengine.DefaultRoot + "/l-" + name
		var released int32
		_, err = s.behind(t, func() error {
			if err := h.Release(ctx); err != nil {
				return err
			}
			_, st, err := s.raw.Get(path)
			if err == nil {
				released = st.Version
			}
			return err
		}, func() (*distlock.Lease, error) {
			return nil, onFollower.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "ghost-first"})
		})
		if err != nil {
			t.Fatalf("round %d: the Leave through the follower: %v", i, err)
		}
		// The Leave was answered by the follower once it applied it; the
		// leader sends a commit to its followers before it applies it
		// itself, so its reading may come from before the Leave (seen at
		// load 12: the name node at the release's version, the leaving
		// place still listed, after the follower had answered the Leave's
		// transaction). A sync does not help on the leader (its sync is
		// not matched with commits); a write of this session does: it is
		// proposed after the Leave's transaction was committed, and the
		// leader applies commits in order before it answers.
		if _, err := s.raw.Set(backlogPath, nil, -1); err != nil {
			t.Fatal(err)
		}
		_, st, err := s.raw.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version == released {
			stale++
			t.Logf("round %d: the reserved head left through the follower without the release recorded again (name node at version %d, the release's)", i, released)
		}
		_ = onLeader.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "ghost-second"})
	}
	if stale > 0 {
		t.Errorf("%d of %d leaves through a follower behind the release did not pass the reservation on", stale, staleRounds)
	}
}
