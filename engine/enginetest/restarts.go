package enginetest

// Cases of the engines' own tests that restart or stop their server
// process (harness work each engine does its own way), written once.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// lossAt is when l's loss was recorded (LostError.At).
func lossAt(t *testing.T, l *distlock.Lease) time.Time {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(time.Minute):
		t.Fatalf("lease %q (token %d) never ended", l.Name(), l.Token())
	}
	var lost *distlock.LostError
	if errors.As(l.Err(), &lost) {
		return lost.At
	}
	t.Fatalf("lease %q ended with %v, want a *LostError", l.Name(), l.Err())
	return time.Time{}
}

// tokenLog checks that each grant's token is above every earlier one.
type tokenLog struct {
	t    *testing.T
	last uint64
	what string
}

func (g *tokenLog) add(what string, token uint64) {
	g.t.Helper()
	if token <= g.last {
		g.t.Fatalf("%s: token %d not above %d (%s)", what, token, g.last, g.what)
	}
	g.last, g.what = token, what
}

// TokensAcrossRestarts runs, on Client c of a backend whose server
// restart kills and starts again on its data, a case of the engines'
// restart tests (first written as etcd's and PostgreSQL's stranger
// acceptance tests): one name taken in turn as a mutex, an election, a
// semaphore, a set (AcquireAll), again after an expiry (of a mutex with
// ttl expiry), a force-release, and server restarts: every grant's
// token is above every earlier grant's (Inspect's HighWater below the
// last token is logged: it is the highest the engine still remembers).
// An RW lock's name the same way.
func TokensAcrossRestarts(t *testing.T, c *distlock.Client, expiry time.Duration, restart func()) {
	ctx := ctxTimeout(t, 3*time.Minute)
	name := lockName(t)
	rw := name + "-rw"
	g := &tokenLog{t: t}
	h := &tokenLog{t: t}

	restarted := func() {
		t.Helper()
		restart()
		WaitFor(t, 30*time.Second, "the server to answer", func() bool {
			_, err := c.Inspect(ctx, name)
			return err == nil
		})
	}
	checkHW := func(n string, last uint64) {
		t.Helper()
		t.Logf("checking %s after %s", n, g.what)
		info, err := c.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if info.HighWater != 0 && info.HighWater < last {
			// Documented: the highest the engine still remembers (a
			// released mutex's row is gone, a free semaphore's stays).
			t.Logf("%s: HighWater %d below the last token %d (%s)", n, info.HighWater, last, info.Kind)
		}
	}
	must := func(l *distlock.Lease, err error) *distlock.Lease {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	// A mutex, released.
	l := must(c.Acquire(ctx, name))
	g.add("mutex", l.Token())
	must(nil, l.Release(ctx))
	// An election, resigned.
	ld, err := c.Campaign(ctx, name, "v")
	must(nil, err)
	g.add("election", ld.Term())
	must(nil, ld.Resign(ctx))
	// A mutex left to expire.
	l = must(c.Acquire(ctx, name, distlock.WithTTL(expiry), distlock.WithAutoRenew(false)))
	g.add("mutex to expire", l.Token())
	lossAt(t, l)
	WaitFor(t, 30*time.Second, "the expired mutex to be free", func() bool {
		info, err := c.Inspect(ctx, name)
		return err == nil && !info.Held
	})
	// A restart with the name free.
	restarted()
	checkHW(name, g.last)
	l = must(c.Acquire(ctx, name))
	g.add("mutex after a restart", l.Token())
	// A restart while held: the lease survives, the next grant is above.
	restarted()
	must(nil, l.Release(ctx))
	// Two permits of a semaphore, one force-released.
	s := c.Semaphore(name, 2)
	p1 := must(s.Acquire(ctx))
	g.add("permit 1", p1.Token())
	p2 := must(s.Acquire(ctx))
	g.add("permit 2", p2.Token())
	if ok, err := c.ForceRelease(ctx, name); err != nil || !ok {
		t.Fatalf("force-release of the semaphore: %v, %v", ok, err)
	}
	lossAt(t, p1)
	lossAt(t, p2)
	restarted()
	checkHW(name, g.last)
	p3 := must(s.Acquire(ctx))
	g.add("permit after the force-release and a restart", p3.Token())
	must(nil, p3.Release(ctx))
	// A mutex again (a shared lock's kind stays stored; a mutex may take it).
	l = must(c.Acquire(ctx, name))
	g.add("mutex after the semaphore", l.Token())
	if ok, err := c.ForceRelease(ctx, name); err != nil || !ok {
		t.Fatalf("force-release of the mutex: %v, %v", ok, err)
	}
	lossAt(t, l)
	// A set with the name in it.
	set, err := c.AcquireAll(ctx, []string{name, name + "-other"})
	must(nil, err)
	g.add("set", set.Tokens()[name])
	must(nil, set.Release(ctx))
	restarted()
	checkHW(name, g.last)
	l = must(c.TryAcquire(ctx, name))
	g.add("mutex after the set and a restart", l.Token())
	must(nil, l.Release(ctx))

	// The RW lock's name: writer, readers, force-release, restart, mutex.
	m := c.RWMutex(rw)
	w := must(m.Lock(ctx))
	h.add("writer", w.Token())
	must(nil, w.Release(ctx))
	r1 := must(m.RLock(ctx))
	h.add("reader 1", r1.Token())
	r2 := must(m.RLock(ctx))
	h.add("reader 2", r2.Token())
	if ok, err := c.ForceRelease(ctx, rw); err != nil || !ok {
		t.Fatalf("force-release of the readers: %v, %v", ok, err)
	}
	lossAt(t, r1)
	restarted()
	checkHW(rw, h.last)
	l = must(c.Acquire(ctx, rw))
	h.add("mutex after the readers", l.Token())
	must(nil, l.Release(ctx))
	w = must(m.TryLock(ctx))
	h.add("writer after the mutex", w.Token())
	must(nil, w.Release(ctx))
}

// ServerStopped runs, on Clients holder and waiter of a backend whose
// whole server stop stops (SIGSTOP) until cont is called, a case of the
// engines' stop tests (first written as etcd's and PostgreSQL's stranger
// acceptance tests): the server is stopped for longer than the holders'
// ttls while each kind is held and a waiter of the same kind queues, then
// continued: each holder is told of its loss (by its own deadline) before
// the waiter's grant came back, and the waiter's token is above the
// holder's.
func ServerStopped(t *testing.T, holder, waiter *distlock.Client, stop func() (cont func())) {
	ctx := ctxTimeout(t, 2*time.Minute)
	const ttl = 2 * time.Second
	base := lockName(t)
	kinds := []struct {
		name string
		take func(c *distlock.Client, name string) (*distlock.Lease, error)
	}{
		{"mutex", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.Acquire(ctx, name, distlock.WithTTL(ttl))
		}},
		{"semaphore", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.Semaphore(name, 1).Acquire(ctx, distlock.WithTTL(ttl))
		}},
		{"rw-write", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.RWMutex(name).Lock(ctx, distlock.WithTTL(ttl))
		}},
	}
	type hw struct {
		held *distlock.Lease
		got  chan *distlock.Lease
		at   chan time.Time
	}
	var all []hw
	for _, k := range kinds {
		name := base + "-" + k.name
		l, err := k.take(holder, name)
		if err != nil {
			t.Fatal(err)
		}
		x := hw{held: l, got: make(chan *distlock.Lease, 1), at: make(chan time.Time, 1)}
		go func() {
			w, err := k.take(waiter, name)
			x.at <- time.Now()
			if err != nil {
				t.Errorf("%s waiter: %v", k.name, err)
			}
			x.got <- w
		}()
		WaitFor(t, 30*time.Second, k.name+"'s waiter to queue", func() bool {
			info, err := holder.Inspect(ctx, name)
			if err != nil {
				return false
			}
			if info.Waiters > 0 {
				return true
			}
			sinfo, err := holder.RWMutex(name).Inspect(ctx)
			return err == nil && sinfo.Waiters > 0
		})
		all = append(all, x)
	}
	cont := stop()
	t.Cleanup(cont)
	stopped := time.Now()
	for _, x := range all {
		if time.Until(x.held.Deadline()) > 0 {
			select {
			case <-x.held.Done():
			case <-time.After(time.Until(x.held.Deadline()) + 5*time.Second):
				t.Fatalf("%s: not told of its loss within 5 s of its deadline", x.held.Name())
			}
		}
	}
	// The fault itself: the server stays stopped past the end of the
	// leases it keeps (ttl after the stop, and a second), not a wait for
	// a condition this test could observe while the server is stopped.
	time.Sleep(time.Until(stopped.Add(ttl + time.Second)))
	cont()
	for i, x := range all {
		lost := lossAt(t, x.held)
		var w *distlock.Lease
		var at time.Time
		select {
		case w = <-x.got:
			at = <-x.at
		case <-ctx.Done():
			t.Fatalf("%s: the waiter was never granted", kinds[i].name)
		}
		if w == nil {
			continue
		}
		if !lost.Before(at) {
			t.Errorf("%s: holder told of its loss at %v, after the waiter's grant returned at %v", kinds[i].name, lost, at)
		}
		if w.Token() <= x.held.Token() {
			t.Errorf("%s: waiter's token %d not above the holder's %d", kinds[i].name, w.Token(), x.held.Token())
		}
		_ = w.Release(ctx)
	}
}

// ObserveAcrossRestarts runs, on a backend whose servers restart, a case
// of the engines' restart tests (first written as the quorum's and
// ZooKeeper's stranger tests): an election observed (through a Client of
// its own) while rounds leaders, each of a Client of client's, campaign in
// turn, proclaim and resign. underLeader(i) runs with round i's leader
// elected, betweenLeaders(i) after it resigned (either may be nil): each
// leader and each proclaimed value is reported within within, with its
// own term, and the reported terms never go down (a state with no leader
// aside).
func ObserveAcrossRestarts(t *testing.T, client func(t *testing.T) *distlock.Client, rounds int, within time.Duration, underLeader, betweenLeaders func(i int)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*4*within)
	defer cancel()
	name := lockName(t)
	ch, err := client(t).Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	seen := func(term uint64, value string) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case st, ok := <-ch:
				if !ok {
					t.Fatal("the observation ended")
				}
				if !st.Elected() {
					continue // no leader between two terms
				}
				if st.Term < last {
					t.Fatalf("term %d reported after %d", st.Term, last)
				}
				last = st.Term
				if st.Term == term && st.Value == value {
					return
				}
			case <-deadline:
				t.Fatalf("leader %q of term %d not reported within %v (last term %d)", value, term, within, last)
			}
		}
	}
	for i := range rounds {
		v := fmt.Sprintf("leader-%d", i)
		ld, err := client(t).Campaign(ctx, name, v)
		if err != nil {
			t.Fatal(err)
		}
		seen(ld.Term(), v)
		if underLeader != nil {
			underLeader(i)
		}
		if err := ld.Proclaim(ctx, v+"-proclaimed"); err != nil {
			t.Fatal(err)
		}
		seen(ld.Term(), v+"-proclaimed")
		if err := ld.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if betweenLeaders != nil {
			betweenLeaders(i)
		}
	}
}
