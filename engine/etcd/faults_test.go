package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/etcd/etcdfence"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// The fault tests run a three-member cluster on loopback. Each checks that
// no two holders' beliefs overlap and that tokens increase, whatever the
// fault.

func lockName(t *testing.T) string { return fmt.Sprintf("%s-%x", t.Name(), rand.Uint64()) }

// TestLeaderKilled kills the leader while a lock is held and two waiters
// wait: the holder keeps its lease across the election, the waiters get the
// lock in arrival order after its release, and the killed member rejoins.
func TestLeaderKilled(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := lockName(t)
	var h holds
	holder, watch := newClient(t, cl), newClient(t, cl)
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	order := make(chan int, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		c := newClient(t, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := c.Acquire(ctx, name, distlock.WithTTL(6*time.Second), distlock.WithFair())
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			h.work(ctx, "waiter "+strconv.Itoa(i), w, time.Now(), 200*time.Millisecond)
		}()
		waitFor(t, 10*time.Second, "waiter "+strconv.Itoa(i), func() bool {
			info, err := watch.Inspect(ctx, name)
			return err == nil && info.Waiters == i+1
		})
	}
	leader, err := cl.Leader(cl.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing the leader %s", cl.Members[leader].Name)
	cl.Members[leader].Kill()
	cl.WaitReady(30 * time.Second)
	// Two renewals after the new leader took over: one sent a renewal
	// interval after the election.
	waitRenewedAfter(t, l, time.Now().Add(l.TTL()/3))
	if err := l.Err(); err != nil {
		t.Fatalf("the holder lost its lease across the election: %v", err)
	}
	if info, err := watch.Inspect(ctx, name); err != nil || info.Owner != l.Owner() || info.Waiters != 2 {
		t.Fatalf("after the election: %+v, %v; want the holder and 2 waiters", info, err)
	}
	end := time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h.hold("holder", l.Token(), start, end)
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("waiters served in order %v, want [0 1]", got)
	}
	cl.Members[leader].Restart()
	cl.WaitReady(30 * time.Second)
	l, err = newClient(t, cl).Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h.hold("after the restart", l.Token(), time.Now(), time.Now())
	_ = l.Release(ctx)
	h.check(t)
}

// TestStoppedMembers stops (SIGSTOP) one member, then a second: with a
// minority stopped locks are granted and kept; with a majority stopped
// every attempt is an error, never a grant and never "locked", and a held
// lease is lost at its deadline; after SIGCONT the lock is granted again
// with a larger token.
func TestStoppedMembers(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var h, minority holds
	name := lockName(t)
	holder := newClient(t, cl)
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	leader, err := cl.Leader(cl.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	first, second := cl.Members[(leader+1)%3], cl.Members[leader]
	t.Cleanup(func() { first.Cont(); second.Cont() })

	first.Stop()
	t.Logf("stopped %s (a follower)", first.Name)
	c := newClient(t, cl)
	for i := range 5 {
		actx, acancel := context.WithTimeout(ctx, 15*time.Second)
		m, err := c.Acquire(actx, name+"-minority")
		acancel()
		if err != nil {
			t.Fatalf("grant %d with a minority stopped: %v", i, err)
		}
		minority.hold("minority "+strconv.Itoa(i), m.Token(), time.Now(), time.Now())
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Renewals with a member stopped: one sent two renewal intervals after
	// the grants above (three renewals in all).
	waitRenewedAfter(t, l, time.Now().Add(2*l.TTL()/3))
	if err := l.Err(); err != nil {
		t.Fatalf("the holder lost its lease with a minority stopped: %v", err)
	}

	probe := enginetest.StartProbe(t)
	lost := make(chan time.Time, 1)
	go func() { lost <- lossAt(l) }()
	second.Stop()
	t.Logf("stopped %s (the leader): a majority is stopped", second.Name)
	stopped := time.Now()
	other := newClient(t, cl)
	for _, n := range []string{name, name + "-free"} {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		got, err := other.TryAcquire(actx, n)
		acancel()
		switch {
		case err == nil:
			t.Fatalf("TryAcquire %s without a quorum granted token %d", n, got.Token())
		case errors.Is(err, distlock.ErrLocked):
			t.Fatalf("TryAcquire %s without a quorum: %v; want an error, not \"locked\"", n, err)
		}
		t.Logf("without a quorum: %v", err)
	}
	var end time.Time
	select {
	case end = <-lost:
	case <-ctx.Done():
		t.Fatal("the holder's lease was never lost without a quorum")
	}
	// Timer-driven: at the deadline, late only by scheduling.
	enginetest.Bounded(t, "the loss signal after the lease's deadline", end.Sub(l.Deadline()), probe.Slack(), probe.Delay(), l.TTL()/3)
	t.Logf("lease lost %v after the quorum was lost: %v", end.Sub(stopped), l.Err())
	h.hold("holder", l.Token(), start, l.Deadline())

	first.Cont()
	second.Cont()
	cl.WaitReady(30 * time.Second)
	l2, err := other.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h.hold("after the quorum came back", l2.Token(), time.Now(), time.Now())
	_ = l2.Release(ctx)
	h.check(t)
	minority.check(t)
}

// TestPausedHolder: a holder whose process is stopped past its ttl (its
// calls to etcd block) is told of the loss at its deadline, before etcd
// grants the lock to anyone else; when it resumes, its write fenced with
// etcdfence is refused. The control shows why fencing is needed: the same
// late write without the guard overwrites the new holder's, as Jepsen found
// for etcd's own locks.
func TestPausedHolder(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := lockName(t)
	p := &pausable{}
	holder := newClient(t, cl, func(e engine.Engine) engine.Engine { p.Engine = e; return p })
	other := newClient(t, cl)
	guard := etcdfence.New(cl.Client(t))
	data := "test/paused/" + name
	for _, fenced := range []bool{true, false} {
		l, err := holder.Acquire(ctx, name, distlock.WithTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		write := func(l *distlock.Lease, v string) error {
			if fenced {
				return guard.Put(ctx, data, v, l.Token(), l.Owner())
			}
			_, err := cl.Client(t).Put(ctx, data, v)
			return err
		}
		if err := write(l, "old holder"); err != nil {
			t.Fatal(err)
		}
		p.pause()
		lost := make(chan time.Time, 1)
		go func() { lost <- lossAt(l) }()
		l2, err := other.Acquire(ctx, name, distlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		granted := time.Now()
		lostAt := <-lost
		if !lostAt.Before(granted) {
			t.Fatalf("loss signalled at %v, after the other grant at %v", lostAt, granted)
		}
		t.Logf("loss signalled %v before the next grant (ttl %v)", granted.Sub(lostAt), l.TTL())
		if l2.Token() <= l.Token() {
			t.Fatalf("token %d after %d", l2.Token(), l.Token())
		}
		if err := write(l2, "new holder"); err != nil {
			t.Fatal(err)
		}
		p.resume()
		// The paused holder resumes and writes without looking at Done.
		err = write(l, "late write of the old holder")
		resp, gerr := cl.Client(t).Get(ctx, data)
		if gerr != nil {
			t.Fatal(gerr)
		}
		got := string(resp.Kvs[0].Value)
		if fenced {
			if !errors.Is(err, etcdfence.ErrStale) || got != "new holder" {
				t.Fatalf("fenced late write: %v, stored %q", err, got)
			}
		} else if got != "late write of the old holder" {
			t.Fatalf("control: the unfenced late write did not land (%q): the check cannot fail", got)
		} else {
			t.Log("control: without the guard the old holder's late write overwrote the new holder's")
		}
		_ = l2.Release(ctx)
	}
}

// TestMemberRestarts restarts every member in turn while two clients take
// the lock from each other in a loop: every grant's token is above every
// earlier one, holders never overlap, and the loop goes on.
func TestMemberRestarts(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	name := lockName(t)
	var h holds
	stop := make(chan struct{})
	var wg sync.WaitGroup
	grants := make([]int, 2)
	var total atomic.Int64 // grants so far, read while the clients run
	progress := func(what string) {
		from := total.Load()
		waitFor(t, 60*time.Second, "grants "+what, func() bool { return total.Load() >= from+3 })
	}
	for i := range 2 {
		c := newClient(t, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				actx, acancel := context.WithTimeout(ctx, 20*time.Second)
				l, err := c.Acquire(actx, name, distlock.WithTTL(3*time.Second))
				acancel()
				if err != nil {
					if ctx.Err() == nil {
						t.Logf("client %d: %v (retrying)", i, err)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				grants[i]++
				total.Add(1)
				h.work(ctx, "client "+strconv.Itoa(i), l, time.Now(), 20*time.Millisecond)
			}
		}()
	}
	for _, m := range cl.Members {
		progress("before restarting " + m.Name)
		t.Logf("restarting %s", m.Name)
		m.Restart()
		cl.WaitReady(30 * time.Second)
	}
	progress("after the last restart")
	close(stop)
	wg.Wait()
	t.Logf("grants: %v", grants)
	if grants[0] == 0 || grants[1] == 0 {
		t.Fatalf("a client never got the lock: %v", grants)
	}
	h.check(t)
}

// TestOverlapCheckCanFail is the control of the fault tests' check: with a
// broken engine that takes the lock from its holder, the same check finds
// overlapping holders. The two clients go on until it does (or 20 s): on
// a starved machine they may take turns for a while without meeting.
func TestOverlapCheckCanFail(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := lockName(t)
	var h holds
	var wg sync.WaitGroup
	until := time.Now().Add(20 * time.Second)
	for i := range 2 {
		c := newClient(t, cl, func(e engine.Engine) engine.Engine { return usurper{e} })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 20 || len(h.violations()) == 0 && time.Now().Before(until); n++ {
				l, err := c.Acquire(ctx, name, distlock.WithTTL(3*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				h.work(ctx, "client "+strconv.Itoa(i), l, time.Now(), 10*time.Millisecond)
			}
		}()
	}
	wg.Wait()
	bad := h.violations()
	if len(bad) == 0 {
		t.Fatal("the broken engine's holders never overlapped: the check cannot fail")
	}
	t.Logf("control: %d violations found, e.g. %s", len(bad), bad[0])
}
