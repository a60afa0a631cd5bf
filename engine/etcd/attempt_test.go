package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
	"github.com/distlock/distlock/internal/waiting"
)

// electionTimeout is etcd's default election timeout, which the harness's
// members run with: a new leader is elected within one to two of them
// after the old one stops (the timeout is randomized up to twice itself).
const electionTimeout = time.Second

// raftHeartbeat is etcd's default heartbeat interval. The members run on
// the same CPUs as the test: a scheduling delay of a heartbeat interval,
// measured in the test, makes the election's timing the machine's (the
// members miss heartbeats too), so a bound that includes an election is
// not judged from there on.
const raftHeartbeat = 100 * time.Millisecond

// attemptClient returns a Client on an engine of its own with per-attempt
// deadline d, on an etcd client of every member.
func attemptClient(t *testing.T, cl *etcdtest.Cluster, d time.Duration) *distlock.Client {
	t.Helper()
	e := etcdengine.New(cl.Client(t), etcdengine.WithAttemptTimeout(d))
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
	return c
}

// stopLeader stops (SIGSTOP) the leader of cl, found by the maintenance
// Status API, and returns it and a probe of this machine's scheduling
// delays started just before; the member is resumed when the test ends.
func stopLeader(t *testing.T, cl *etcdtest.Cluster) (*etcdtest.Member, *enginetest.Probe) {
	t.Helper()
	leader, err := cl.Leader(cl.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	m := cl.Members[leader]
	t.Cleanup(m.Cont) // before the cluster's Kill, which sends SIGCONT too
	probe := enginetest.StartProbe(t)
	m.Stop()
	t.Logf("stopped the leader %s", m.Name)
	return m, probe
}

// TestPausedLeaderCalls stops the leader (SIGSTOP: its connections stay
// open, so a request sent there hangs rather than fails) while a lock is
// held, and makes every kind of call through clients of all endpoints:
// each completes within a few per-attempt deadlines plus an election
// (requests that hang are sent again to another member), and the lock
// semantics hold: the release frees the lock, a held lock refuses another
// owner, tokens increase, an extension keeps the lease.
func TestPausedLeaderCalls(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const attempt = 500 * time.Millisecond
	// A call's requests are sequential steps (a read, then a transaction;
	// the Client's own steps around them); each may be sent to the stopped
	// member once before it goes elsewhere, and the first waits for the
	// election: up to two rounds of it (each a randomized timeout of up to
	// twice electionTimeout), since the two members left may split their
	// first vote. (One round was allowed before: an Extend took 4.51 s
	// against 4.08 s with no scheduling delay measured.)
	const bound = 4*attempt + 2*2*electionTimeout
	name := lockName(t)
	holder, other := attemptClient(t, cl, attempt), attemptClient(t, cl, attempt)
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m, probe := stopLeader(t, cl)
	timed := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s with the leader stopped: %v (after %v)", what, err, took)
		}
		t.Logf("%s took %v", what, took)
		enginetest.Bounded(t, what, took, bound+probe.Slack(), probe.Delay(), raftHeartbeat)
	}
	timed("Extend", func() error { return l.Extend(ctx, 6*time.Second) })
	timed("TryAcquire of a held lock", func() error {
		got, err := other.TryAcquire(ctx, name)
		if err == nil {
			_ = got.Release(ctx)
			return errors.New("granted while held")
		}
		if errors.Is(err, distlock.ErrLocked) {
			return nil
		}
		return err
	})
	timed("Release", func() error { return l.Release(ctx) })
	var l2 *distlock.Lease
	timed("Acquire", func() (err error) {
		l2, err = other.Acquire(ctx, name, distlock.WithTTL(6*time.Second))
		return err
	})
	if l2.Token() <= l.Token() {
		t.Fatalf("token %d granted after %d", l2.Token(), l.Token())
	}
	timed("Inspect", func() error {
		info, err := holder.Inspect(ctx, name)
		if err == nil && (!info.Held || info.Owner != l2.Owner() || info.Token != l2.Token()) {
			err = errors.New("does not see the holder")
		}
		return err
	})
	timed("Release of the second grant", func() error { return l2.Release(ctx) })
	// The other kinds go through the same requests.
	var p1 *distlock.Lease
	timed("Semaphore Acquire", func() (err error) {
		p1, err = holder.Semaphore(name+"-sem", 1).Acquire(ctx, distlock.WithTTL(6*time.Second))
		return err
	})
	timed("Semaphore TryAcquire of a full semaphore", func() error {
		if p, err := other.Semaphore(name+"-sem", 1).TryAcquire(ctx); !errors.Is(err, distlock.ErrLocked) {
			if err == nil {
				_ = p.Release(ctx)
			}
			return fmt.Errorf("got %v, want locked", err)
		}
		return nil
	})
	timed("Semaphore Release", func() error { return p1.Release(ctx) })
	var r *distlock.Lease
	timed("RWMutex RLock", func() (err error) {
		r, err = holder.RWMutex(name+"-rw").RLock(ctx, distlock.WithTTL(6*time.Second))
		return err
	})
	timed("RWMutex RUnlock", func() error { return r.Release(ctx) })
	var lead *distlock.Leadership
	timed("Campaign", func() (err error) {
		lead, err = holder.Campaign(ctx, name+"-elect", "a", distlock.WithTTL(6*time.Second))
		return err
	})
	timed("Leader", func() error {
		got, err := other.Leader(ctx, name+"-elect")
		if err == nil && got.Term != lead.Term() {
			err = fmt.Errorf("term %d, want %d", got.Term, lead.Term())
		}
		return err
	})
	timed("Resign", func() error { return lead.Resign(ctx) })
	m.Cont()
	cl.WaitReady(30 * time.Second)
}

// TestWaitBudgetUnreachable: against a member that accepts connections but
// never answers (stopped), an Acquire returns within its context's
// deadline plus the documented overrun (waiting.LeaveTimeout), with the
// deadline's error, and a TryAcquire within its own.
func TestWaitBudgetUnreachable(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	m := cl.Members[0]
	c := attemptClient(t, cl, etcdengine.DefaultAttemptTimeout)
	t.Cleanup(m.Cont)
	probe := enginetest.StartProbe(t)
	m.Stop()
	const budget = 2 * time.Second
	for _, try := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		start := time.Now()
		var err error
		if try {
			_, err = c.TryAcquire(ctx, lockName(t))
		} else {
			_, err = c.Acquire(ctx, lockName(t))
		}
		took := time.Since(start)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try %v: got %v, want the deadline's error", try, err)
		}
		t.Logf("try %v: %v after %v", try, err, took)
		enginetest.Bounded(t, "a call with a 2s budget", took, budget+waiting.LeaveTimeout+probe.Slack(), probe.Delay(), budget/4)
	}
	m.Cont()
}

// TestPausedLeaderSubscribe: engines whose clients were connected to every
// member before the leader stopped subscribe afterwards. Each engine's
// watch stream goes to one member, the stopped one for about a third of
// them: a watch not created within an attempt deadline is made again on a
// new stream, which goes to another member. Every Subscribe returns within
// a few attempt deadlines plus an election, and every subscription is
// woken by a release of the lock.
func TestPausedLeaderSubscribe(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const attempt = 500 * time.Millisecond
	// Up to three watch streams in a row may go to the stopped member
	// (attempts of 1, 2 and 4 times the deadline), the first while the
	// cluster elects a new leader.
	const bound = 8*attempt + 2*electionTimeout
	name := lockName(t)
	var engines []*etcdengine.Engine
	for range 9 {
		e := etcdengine.New(cl.Client(t), etcdengine.WithAttemptTimeout(attempt))
		t.Cleanup(func() { _ = e.Close() })
		if _, err := e.Inspect(ctx, name); err != nil { // connected to every member
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	holder := attemptClient(t, cl, attempt)
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m, probe := stopLeader(t, cl)
	type subbed struct {
		took time.Duration
		err  error
		sub  interface {
			C() <-chan struct{}
			Close()
		}
	}
	results := make(chan subbed, len(engines))
	for _, e := range engines {
		go func() {
			start := time.Now()
			s, err := e.Subscribe(ctx, name)
			results <- subbed{time.Since(start), err, s}
		}()
	}
	var subs []subbed
	for range engines {
		r := <-results
		if r.err != nil {
			t.Fatalf("Subscribe with the leader stopped: %v (after %v)", r.err, r.took)
		}
		t.Cleanup(r.sub.Close)
		subs = append(subs, r)
		enginetest.Bounded(t, "Subscribe", r.took, bound+probe.Slack(), probe.Delay(), raftHeartbeat)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range subs {
		select {
		case <-s.sub.C():
		case <-ctx.Done():
			t.Fatalf("subscription %d (made in %v) was not woken by the release", i, s.took)
		}
	}
	var worst time.Duration
	for _, s := range subs {
		worst = max(worst, s.took)
	}
	t.Logf("%d subscriptions made in at most %v, all woken by the release", len(subs), worst)
	m.Cont()
}
