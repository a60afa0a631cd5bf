package etcd_test

// A stranger's tests of the etcd engine through the public Client API on a
// three-member cluster under member faults: the leader killed or stopped
// while every kind of lock is held with a waiter queued behind it; the
// member a holder's only connection goes to stopped past the ttl; kinds
// mixed on one name from Clients on different members; bad input.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// memberClient is a Client on an engine of its own whose etcd client
// speaks only to the given members (a process connected to those alone).
func memberClient(t *testing.T, cl *etcdtest.Cluster, idx ...int) *distlock.Client {
	t.Helper()
	var eps []string
	for _, i := range idx {
		eps = append(eps, cl.Members[i].Client)
	}
	c := distlock.New(etcdengine.New(cl.ClientOf(t, eps...)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// leaderAmong waits until the given members agree on a leader among
// themselves and returns its index (WaitReady asks every running member,
// a stopped one included).
func leaderAmong(t *testing.T, cl *etcdtest.Cluster, within time.Duration, idx ...int) int {
	t.Helper()
	cli := cl.Client(t)
	var at int
	waitFor(t, within, fmt.Sprintf("a leader among members %v", idx), func() bool {
		ids := map[uint64]int{}
		var leader uint64
		for _, i := range idx {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cli.Status(ctx, cl.Members[i].Client)
			cancel()
			if err != nil || st.Leader == 0 || leader != 0 && st.Leader != leader {
				return false
			}
			leader = st.Leader
			ids[st.Header.MemberId] = i
		}
		i, ok := ids[leader]
		at = i
		return ok
	})
	return at
}

// termLog records every term an observer reports (0: nobody leads).
type termLog struct {
	mu    sync.Mutex
	terms []uint64
}

// observeTerms records what ch reports until it is closed.
func observeTerms(ch <-chan distlock.Leader) *termLog {
	tl := &termLog{}
	go func() {
		for l := range ch {
			tl.mu.Lock()
			tl.terms = append(tl.terms, l.Term)
			tl.mu.Unlock()
		}
	}()
	return tl
}

// until waits for term to be reported, then checks that the leaders'
// terms never went down.
func (tl *termLog) until(t *testing.T, term uint64, within time.Duration) {
	t.Helper()
	seen := func() []uint64 {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return slices.Clone(tl.terms)
	}
	waitFor(t, within, fmt.Sprintf("the observer reporting term %d", term), func() bool { return slices.Contains(seen(), term) })
	var last uint64
	for _, x := range seen() {
		if x != 0 && x < last {
			t.Fatalf("observer's terms went down: %v", seen())
		}
		last = max(last, x)
	}
	t.Logf("observer reported %v", seen())
}

// served is a waiter's outcome.
type served struct {
	what  string
	token uint64
	err   error
	at    time.Time
	lease *distlock.Lease
}

// goWait runs f in a goroutine and sends its outcome on ch.
func goWait(ctx context.Context, ch chan<- served, what string, f func(context.Context) (*distlock.Lease, error)) {
	go func() {
		l, err := f(ctx)
		s := served{what: what, err: err, at: time.Now(), lease: l}
		if l != nil {
			s.token = l.Token()
		}
		ch <- s
	}()
}

// queuedOn waits until info reports n waiters.
func queuedOn(t *testing.T, what string, n int, info func() (distlock.Info, error)) {
	t.Helper()
	waitFor(t, 15*time.Second, fmt.Sprintf("%d waiter(s) queued on %s", n, what), func() bool {
		in, err := info()
		return err == nil && in.Waiters == n
	})
}

// TestStrangerFailoverKinds: the leader is SIGKILLed, or SIGSTOPped and
// continued later, while a mutex, a semaphore (limit 3, weights 2 and 1
// held, a weight-2 waiter), an RW lock (two readers, a writer queued), an
// election (an observer on another member, a candidate waiting) and a
// latch (a waiter) are held or counting. The holders, connected to every
// member, renew through the new leader and are never lost; nobody is
// served before the releases; afterwards each waiter is served with a
// token above every earlier one, the latch waiter is woken by CountDowns
// through another member, and the observer's terms never go down.
func TestStrangerFailoverKinds(t *testing.T) {
	for _, mode := range []string{"kill", "stop"} {
		t.Run(mode, func(t *testing.T) {
			cl := etcdtest.Start(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			lead, err := cl.Leader(cl.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			a, b := (lead+1)%3, (lead+2)%3
			holder := newClient(t, cl)         // every member
			waiter := memberClient(t, cl, a)   // a follower
			observer := memberClient(t, cl, b) // the other follower
			const ttl = 6 * time.Second
			wttl := distlock.WithTTL(ttl)

			mutex, err := holder.Acquire(ctx, "m", wttl)
			if err != nil {
				t.Fatal(err)
			}
			sem := holder.Semaphore("s", 3)
			p2, err := sem.Acquire(ctx, wttl, distlock.WithWeight(2))
			if err != nil {
				t.Fatal(err)
			}
			p1, err := sem.Acquire(ctx, wttl, distlock.WithWeight(1))
			if err != nil {
				t.Fatal(err)
			}
			var readers []*distlock.Lease
			for range 2 {
				r, err := holder.RWMutex("rw").RLock(ctx, wttl)
				if err != nil {
					t.Fatal(err)
				}
				readers = append(readers, r)
			}
			first, err := holder.Campaign(ctx, "e", "first", wttl)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := holder.CountDownLatch("l").TrySetCount(ctx, 2); err != nil || !ok {
				t.Fatalf("TrySetCount: %v, %v", ok, err)
			}
			leaders, err := observer.Observe(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			terms := observeTerms(leaders)

			ch := make(chan served, 5)
			wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
			defer wcancel()
			goWait(wctx, ch, "mutex", func(c context.Context) (*distlock.Lease, error) { return waiter.Acquire(c, "m", wttl) })
			goWait(wctx, ch, "semaphore", func(c context.Context) (*distlock.Lease, error) {
				return waiter.Semaphore("s", 3).Acquire(c, wttl, distlock.WithWeight(2))
			})
			goWait(wctx, ch, "writer", func(c context.Context) (*distlock.Lease, error) { return waiter.RWMutex("rw").Lock(c, wttl) })
			goWait(wctx, ch, "election", func(c context.Context) (*distlock.Lease, error) {
				l, err := waiter.Campaign(c, "e", "second", wttl)
				if err != nil {
					return nil, err
				}
				return l.Lease(), nil
			})
			latchDone := make(chan error, 1)
			go func() { latchDone <- waiter.CountDownLatch("l").Wait(wctx) }()

			queuedOn(t, "m", 1, func() (distlock.Info, error) { return observer.Inspect(ctx, "m") })
			queuedOn(t, "e", 1, func() (distlock.Info, error) { return observer.Inspect(ctx, "e") })
			queuedOn(t, "s", 1, func() (distlock.Info, error) { return observer.Semaphore("s", 3).Inspect(ctx) })
			queuedOn(t, "rw", 1, func() (distlock.Info, error) { return observer.RWMutex("rw").Inspect(ctx) })
			held := map[string]*distlock.Lease{"mutex": mutex, "permits 2": p2, "permit 1": p1,
				"reader 1": readers[0], "reader 2": readers[1], "leader": first.Lease()}
			var highest uint64
			for _, l := range held {
				highest = max(highest, l.Token())
			}

			m := cl.Members[lead]
			t.Logf("%s the leader %s", mode, m.Name)
			switch mode {
			case "kill":
				m.Kill()
			case "stop":
				m.Stop()
				t.Cleanup(m.Cont)
			}
			faulted := time.Now()
			newLead := leaderAmong(t, cl, 30*time.Second, a, b)
			t.Logf("new leader %s %v after the fault", cl.Members[newLead].Name, time.Since(faulted))
			// Each holder confirms a renewal sent after the fault.
			for what, l := range held {
				waitRenewedAfter(t, l, faulted)
				if err := l.Err(); err != nil {
					t.Fatalf("%s lost across the leader's %s: %v", what, mode, err)
				}
			}
			if mode == "stop" {
				m.Cont()
				cl.WaitReady(30 * time.Second)
				contd := time.Now()
				for what, l := range held {
					waitRenewedAfter(t, l, contd)
					if err := l.Err(); err != nil {
						t.Fatalf("%s lost after the old leader continued: %v", what, err)
					}
				}
			}
			if n, err := observer.CountDownLatch("l").Count(ctx); err != nil || n != 2 {
				t.Fatalf("latch count after the %s: %d, %v; want 2", mode, n, err)
			}
			select {
			case r := <-ch:
				t.Fatalf("%s served while everything was held: token %d, %v", r.what, r.token, r.err)
			case err := <-latchDone:
				t.Fatalf("latch Wait returned while the count was 2: %v", err)
			default:
			}
			for _, what := range []string{"m", "e"} {
				queuedOn(t, what, 1, func() (distlock.Info, error) { return observer.Inspect(ctx, what) })
			}

			// Let go: the holders release, the latch is counted down
			// through the observer's member.
			releasing := map[string]time.Time{}
			for what, ls := range map[string][]*distlock.Lease{"mutex": {mutex}, "semaphore": {p2}, "writer": {readers[0], readers[1]}, "election": {first.Lease()}} {
				releasing[what] = time.Now()
				for _, l := range ls {
					if err := l.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 2 {
				if err := observer.CountDownLatch("l").CountDown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			const bound = 10 * time.Second
			timeout := time.After(bound)
			var second uint64
			for range 4 {
				select {
				case r := <-ch:
					if r.err != nil {
						t.Fatalf("%s after the %s: %v", r.what, mode, r.err)
					}
					t.Logf("%s served %v after its release began, token %d (highest before %d)", r.what, r.at.Sub(releasing[r.what]), r.token, highest)
					if r.at.Before(releasing[r.what]) {
						t.Errorf("%s served at %v, before its holder released at %v", r.what, r.at.Format(time.StampMilli), releasing[r.what].Format(time.StampMilli))
					}
					if r.token <= highest {
						t.Errorf("%s: token %d not above %d, handed out before the fault", r.what, r.token, highest)
					}
					if r.what == "election" {
						second = r.token
					}
					defer func() { _ = r.lease.Release(context.Background()) }()
				case <-timeout:
					t.Fatalf("queued waiters not served within %v of the releases", bound)
				}
			}
			select {
			case err := <-latchDone:
				if err != nil {
					t.Fatalf("latch Wait: %v", err)
				}
			case <-time.After(bound):
				t.Fatalf("latch Wait not woken within %v of the count reaching zero", bound)
			}
			// The observer: first's term, then second's, never down.
			terms.until(t, second, bound)
			_ = p1.Release(ctx)
		})
	}
}

// TestStrangerFailoverStoppedHolderMember: the member that is a holder's
// only connection (a follower, or the leader) is SIGSTOPped past the ttl
// while a mutex, a semaphore's permits, a reader and a leadership are held
// through it and a waiter of each is queued through the other members.
// Each holder is told it lost (Done closed, a *LostError) before the
// waiter holds; the waiter's token is above; when the member continues,
// the holder's late renewals revive nothing: the holder stays lost, the
// waiter keeps the lock and the old holder's Release frees nothing.
func TestStrangerFailoverStoppedHolderMember(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			cl := etcdtest.Start(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			lead, err := cl.Leader(cl.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			x := (lead + 1) % 3
			if which == "leader" {
				x = lead
			}
			y, z := (x+1)%3, (x+2)%3
			holder := memberClient(t, cl, x)
			waiter := memberClient(t, cl, y, z)
			observer := memberClient(t, cl, z)
			const ttl = 3 * time.Second
			wttl := distlock.WithTTL(ttl)

			mutex, err := holder.Acquire(ctx, "m", wttl)
			if err != nil {
				t.Fatal(err)
			}
			permits, err := holder.Semaphore("s", 2).Acquire(ctx, wttl, distlock.WithWeight(2))
			if err != nil {
				t.Fatal(err)
			}
			reader, err := holder.RWMutex("rw").RLock(ctx, wttl)
			if err != nil {
				t.Fatal(err)
			}
			first, err := holder.Campaign(ctx, "e", "first", wttl)
			if err != nil {
				t.Fatal(err)
			}
			leaders, err := observer.Observe(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			terms := observeTerms(leaders)
			ch := make(chan served, 4)
			wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
			defer wcancel()
			goWait(wctx, ch, "mutex", func(c context.Context) (*distlock.Lease, error) { return waiter.Acquire(c, "m", wttl) })
			goWait(wctx, ch, "semaphore", func(c context.Context) (*distlock.Lease, error) {
				return waiter.Semaphore("s", 2).Acquire(c, wttl)
			})
			goWait(wctx, ch, "writer", func(c context.Context) (*distlock.Lease, error) { return waiter.RWMutex("rw").Lock(c, wttl) })
			goWait(wctx, ch, "election", func(c context.Context) (*distlock.Lease, error) {
				l, err := waiter.Campaign(c, "e", "second", wttl)
				if err != nil {
					return nil, err
				}
				return l.Lease(), nil
			})
			queuedOn(t, "m", 1, func() (distlock.Info, error) { return observer.Inspect(ctx, "m") })
			queuedOn(t, "e", 1, func() (distlock.Info, error) { return observer.Inspect(ctx, "e") })
			queuedOn(t, "s", 1, func() (distlock.Info, error) { return observer.Semaphore("s", 2).Inspect(ctx) })
			queuedOn(t, "rw", 1, func() (distlock.Info, error) { return observer.RWMutex("rw").Inspect(ctx) })

			held := map[string]*distlock.Lease{"mutex": mutex, "semaphore": permits, "writer": reader, "election": first.Lease()}
			m := cl.Members[x]
			t.Logf("stopping %s (the %s), the holder's only member", m.Name, which)
			m.Stop()
			t.Cleanup(m.Cont)
			stopped := time.Now()

			got := map[string]served{}
			timeout := time.After(30 * time.Second)
			for len(got) < 4 {
				select {
				case r := <-ch:
					if r.err != nil {
						t.Fatalf("%s: %v", r.what, r.err)
					}
					got[r.what] = r
					defer func() { _ = r.lease.Release(context.Background()) }()
				case <-timeout:
					t.Fatalf("waiters not served within 30 s of the stop (served: %d)", len(got))
				}
			}
			for what, r := range got {
				l := held[what]
				// The loss is judged by what the lease recorded (LostError.At,
				// its deadline), not by when this busy process got to close
				// Done: a starved test process closes it late.
				select {
				case <-l.Done():
				case <-time.After(30 * time.Second):
					t.Errorf("%s: the waiter holds (token %d, %v after the stop) and the old holder's Done is still open 30 s later", what, r.token, r.at.Sub(stopped))
					continue
				}
				var lost *distlock.LostError
				if !errors.As(l.Err(), &lost) {
					t.Errorf("%s: the old holder's Err is %v, want a *LostError", what, l.Err())
					continue
				}
				if !lost.At.Before(r.at) {
					t.Errorf("%s: the old holder was told at %v, after the waiter held at %v", what, lost.At.Format(time.StampMilli), r.at.Format(time.StampMilli))
				}
				if r.token <= l.Token() {
					t.Errorf("%s: the waiter's token %d is not above the old holder's %d", what, r.token, l.Token())
				}
				t.Logf("%s: holder told %v (%v) %v before the waiter held (%v after the stop); tokens %d then %d",
					what, lost.Cause, lost.At.Sub(stopped).Round(time.Millisecond), r.at.Sub(lost.At).Round(time.Millisecond),
					r.at.Sub(stopped).Round(time.Millisecond), l.Token(), r.token)
			}

			// The member comes back: whatever the holder's Client had
			// sent to it is answered now. Nothing is revived.
			m.Cont()
			cl.WaitReady(30 * time.Second)
			contd := time.Now()
			// A request through the holder's member after the late
			// ones, and a renewal of every waiter after the continue.
			if _, err := holder.Inspect(ctx, "m"); err != nil {
				t.Fatal(err)
			}
			for what, r := range got {
				waitRenewedAfter(t, r.lease, contd)
				if err := r.lease.Err(); err != nil {
					t.Fatalf("%s: the new holder lost after the member continued: %v", what, err)
				}
			}
			for what, l := range held {
				if !errors.Is(l.Err(), distlock.ErrLeaseLost) {
					t.Errorf("%s: the old holder's Err after the continue: %v", what, l.Err())
				}
				if err := l.Release(ctx); err == nil {
					t.Logf("%s: the old holder's Release answered nil", what)
				}
			}
			for _, what := range []string{"m", "e"} {
				in, err := observer.Inspect(ctx, what)
				if err != nil || in.Owner != got[map[string]string{"m": "mutex", "e": "election"}[what]].lease.Owner() {
					t.Errorf("%s after the continue: %+v, %v; want the waiter holding", what, in, err)
				}
			}
			if in, err := observer.Semaphore("s", 2).Inspect(ctx); err != nil || in.Count != 1 && in.Owner != got["semaphore"].lease.Owner() {
				t.Logf("semaphore after the continue: %+v, %v", in, err)
			}
			for what, r := range got {
				if err := r.lease.Err(); err != nil {
					t.Errorf("%s: the new holder lost after the old one's Release: %v", what, err)
				}
			}
			// The observer's terms never went down.
			terms.until(t, got["election"].token, 10*time.Second)
		})
	}
}

// proclaimEmpty campaigns for name, proclaims an empty value and resigns,
// returning Proclaim's error (the election's keys go with the resignation).
func proclaimEmpty(ctx context.Context, c *distlock.Client, name string) error {
	l, err := c.Campaign(ctx, name, "v")
	if err != nil {
		return err
	}
	defer func() { _ = l.Resign(context.Background()) }()
	return l.Proclaim(ctx, "")
}

// keysUnder returns the keys etcd holds under prefix.
func keysUnder(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, kv := range resp.Kvs {
		ks = append(ks, string(kv.Key))
	}
	return ks
}

// TestStrangerFailoverMixedKinds: a name held as a semaphore through one
// member is refused as every other kind, at once (a waiting call too), by
// Clients on the other members, with nothing queued or stored; a latch of
// the name is its own; once the permits are released a mutex takes the
// name, and then the shared kinds are refused. Then bad input on the
// cluster: each call a clear *ArgumentError, and nothing stored.
func TestStrangerFailoverMixedKinds(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0, c1, c2 := memberClient(t, cl, 0), memberClient(t, cl, 1), memberClient(t, cl, 2)
	direct := cl.Client(t)
	const name = "mixed"
	sem, err := c0.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	before := keysUnder(t, direct, "distlock/")
	refused := func(what string, err error) {
		t.Helper()
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) {
			t.Errorf("%s on a semaphore: %v (%T), want an *ArgumentError", what, err, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	start := time.Now()
	_, err = c1.Acquire(wctx, name)
	refused("waiting mutex Acquire", err)
	_, err = c2.TryAcquire(wctx, name)
	refused("TryAcquire", err)
	_, err = c2.RWMutex(name).RLock(wctx)
	refused("waiting RLock", err)
	_, err = c1.RWMutex(name).Lock(wctx)
	refused("waiting Lock", err)
	_, err = c2.Campaign(wctx, name, "v")
	refused("Campaign", err)
	wcancel()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refusals took %v: they waited", d)
	}
	if after := keysUnder(t, direct, "distlock/"); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("refused calls changed etcd's keys:\nbefore %v\nafter  %v", before, after)
	}
	// A latch of the same name is its own.
	if ok, err := c1.CountDownLatch(name).TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("latch beside the semaphore: %v, %v", ok, err)
	}
	if err := c2.CountDownLatch(name).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c0.CountDownLatch(name).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err := c2.Semaphore(name, 3).Inspect(ctx); err != nil || in.Count == 0 && !in.Held {
		t.Fatalf("semaphore after the latch: %+v, %v", in, err)
	}
	// A second permit from another member is served under the stored
	// limit (3) whatever the limit it declares.
	p, err := c1.Semaphore(name, 1).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("a permit declared with limit 1 beside weight 2 of limit 3: %v", err)
	}
	if _, err := c2.Semaphore(name, 5).TryAcquire(ctx); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("a fourth permit: %v, want locked", err)
	}
	_ = p.Release(ctx)
	if err := sem.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mu, err := c2.Acquire(ctx, name)
	if err != nil {
		t.Fatalf("mutex after the permits were released: %v", err)
	}
	before = keysUnder(t, direct, "distlock/")
	wctx, wcancel = context.WithTimeout(ctx, 20*time.Second)
	_, err = c0.Semaphore(name, 3).Acquire(wctx)
	refused("semaphore on a mutex", err)
	_, err = c1.RWMutex(name).RLock(wctx)
	refused("RLock on a mutex", err)
	wcancel()
	if after := keysUnder(t, direct, "distlock/"); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("refused calls changed etcd's keys:\nbefore %v\nafter  %v", before, after)
	}
	if err := mu.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Two kinds asked at once on a fresh name from Clients on two
	// members: exactly one is granted, the other refused as the wrong
	// kind, and the name keeps the winner's kind.
	t.Run("race across members", func(t *testing.T) {
		enginetest.KindsRace(t, c0, c1, enginetest.KindsRaceOptions{Rounds: 10, Semaphores: true})
	})

	t.Run("bad input", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fresh := "fresh-" + lockName(t)
		// Names whose stored state only the engine knows: a semaphore of
		// limit 2 with a permit held, a mutex held.
		stored, held := "stored-"+lockName(t), "held-"+lockName(t)
		p, err := c0.Semaphore(stored, 2).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Release(context.Background()) }()
		hm, err := c0.Acquire(ctx, held)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = hm.Release(context.Background()) }()
		before := keysUnder(t, direct, "distlock/")
		bad := []struct {
			what string
			call func(ctx context.Context) error
		}{
			{"empty name", func(ctx context.Context) error { _, err := c0.Acquire(ctx, ""); return err }},
			{"NUL in name", func(ctx context.Context) error { _, err := c0.Acquire(ctx, "a\x00b"); return err }},
			{"name starting with }", func(ctx context.Context) error { _, err := c1.TryAcquire(ctx, "}x"); return err }},
			{"513-byte name", func(ctx context.Context) error { _, err := c2.Acquire(ctx, strings.Repeat("n", 513)); return err }},
			{"invalid UTF-8 name", func(ctx context.Context) error { _, err := c0.Acquire(ctx, "\xff\xfe"); return err }},
			{"negative ttl", func(ctx context.Context) error {
				_, err := c0.Acquire(ctx, fresh, distlock.WithTTL(-time.Second))
				return err
			}},
			{"ttl above 24h", func(ctx context.Context) error {
				_, err := c1.Acquire(ctx, fresh, distlock.WithTTL(25*time.Hour))
				return err
			}},
			{"metadata of 4097 bytes", func(ctx context.Context) error {
				_, err := c2.Acquire(ctx, fresh, distlock.WithMetadata(strings.Repeat("m", 4097)))
				return err
			}},
			{"weight 0", func(ctx context.Context) error {
				_, err := c0.Semaphore(fresh, 3).Acquire(ctx, distlock.WithWeight(0))
				return err
			}},
			{"negative weight", func(ctx context.Context) error {
				_, err := c1.Semaphore(fresh, 3).TryAcquire(ctx, distlock.WithWeight(-1))
				return err
			}},
			{"weight above the declared limit on a fresh name", func(ctx context.Context) error {
				_, err := c2.Semaphore(fresh, 2).Acquire(ctx, distlock.WithWeight(3))
				return err
			}},
			{"weight above the declared limit, TryAcquire", func(ctx context.Context) error {
				_, err := c2.Semaphore(fresh, 2).TryAcquire(ctx, distlock.WithWeight(3))
				return err
			}},
			{"limit 0", func(ctx context.Context) error { _, err := c0.Semaphore(fresh, 0).Acquire(ctx); return err }},
			{"negative limit", func(ctx context.Context) error { _, err := c1.Semaphore(fresh, -2).TryAcquire(ctx); return err }},
			{"SetLimit 0", func(ctx context.Context) error { return c2.Semaphore(fresh, 2).SetLimit(ctx, 0) }},
			{"max hold below 50ms", func(ctx context.Context) error {
				_, err := c0.Acquire(ctx, fresh, distlock.WithMaxHold(time.Millisecond))
				return err
			}},
			{"empty election value", func(ctx context.Context) error { _, err := c1.Campaign(ctx, fresh, ""); return err }},
			{"election value of 4097 bytes", func(ctx context.Context) error {
				_, err := c2.Campaign(ctx, fresh, strings.Repeat("v", 4097))
				return err
			}},
			{"Proclaim of an empty value", func(ctx context.Context) error {
				return proclaimEmpty(ctx, c0, "proclaim-"+fresh)
			}},
			{"latch count 0", func(ctx context.Context) error { _, err := c2.CountDownLatch(fresh).TrySetCount(ctx, 0); return err }},
			{"negative latch count", func(ctx context.Context) error {
				_, err := c0.CountDownLatch(fresh).TrySetCount(ctx, -1)
				return err
			}},
			{"latch empty name", func(ctx context.Context) error { return c1.CountDownLatch("").Wait(ctx) }},
			{"weight above the stored limit (declared 5, stored 2)", func(ctx context.Context) error {
				_, err := c1.Semaphore(stored, 5).Acquire(ctx, distlock.WithWeight(3))
				return err
			}},
			{"weight above the stored limit, TryAcquire", func(ctx context.Context) error {
				_, err := c2.Semaphore(stored, 5).TryAcquire(ctx, distlock.WithWeight(3))
				return err
			}},
			{"SetLimit on a held mutex", func(ctx context.Context) error { return c1.Semaphore(held, 3).SetLimit(ctx, 3) }},
			{"RLock on a name held as a semaphore", func(ctx context.Context) error {
				_, err := c2.RWMutex(stored).RLock(ctx)
				return err
			}},
			{"AcquireAll with a repeated name", func(ctx context.Context) error {
				_, err := c2.AcquireAll(ctx, []string{fresh, fresh})
				return err
			}},
		}
		for _, b := range bad {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			start := time.Now()
			err := b.call(cctx)
			ccancel()
			var ae *distlock.ArgumentError
			switch {
			case err == nil:
				t.Errorf("%s: accepted", b.what)
			case !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument):
				t.Errorf("%s: %v (%T), want an *ArgumentError", b.what, err, err)
			case time.Since(start) > 5*time.Second:
				t.Errorf("%s: refused only after %v", b.what, time.Since(start))
			default:
				t.Logf("%s: %v", b.what, err)
			}
		}
		if after := keysUnder(t, direct, "distlock/"); strings.Join(after, " ") != strings.Join(before, " ") {
			t.Errorf("bad input stored keys:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// TestStrangerFailoverStoppedWaiterMember: the member that is the only
// connection of a queued mutex waiter, a queued semaphore waiter, a
// waiting candidate, an observer and a latch waiter is SIGSTOPped (a
// follower, or the leader) past the waiters' WaiterTTL. Meanwhile, through
// the other members, the holders let go and the latch is counted down to
// zero. When the member continues, every waiter is served (with a token
// above the earlier holders'), the latch waiter is woken and the observer
// reports the new term without its terms going down.
func TestStrangerFailoverStoppedWaiterMember(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			cl := etcdtest.Start(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			lead, err := cl.Leader(cl.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			x := (lead + 1) % 3
			if which == "leader" {
				x = lead
			}
			y, z := (x+1)%3, (x+2)%3
			holder := memberClient(t, cl, y, z)
			waiter := memberClient(t, cl, x)
			other := memberClient(t, cl, z)
			const ttl = 3 * time.Second
			wttl := distlock.WithTTL(ttl)

			mutex, err := holder.Acquire(ctx, "m", wttl)
			if err != nil {
				t.Fatal(err)
			}
			permits, err := holder.Semaphore("s", 3).Acquire(ctx, wttl, distlock.WithWeight(2))
			if err != nil {
				t.Fatal(err)
			}
			writer, err := holder.RWMutex("rw").Lock(ctx, wttl)
			if err != nil {
				t.Fatal(err)
			}
			first, err := holder.Campaign(ctx, "e", "first", wttl)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := holder.CountDownLatch("l").TrySetCount(ctx, 2); err != nil || !ok {
				t.Fatalf("TrySetCount: %v, %v", ok, err)
			}
			leaders, err := waiter.Observe(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			terms := observeTerms(leaders)
			ch := make(chan served, 4)
			wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
			defer wcancel()
			goWait(wctx, ch, "mutex", func(c context.Context) (*distlock.Lease, error) { return waiter.Acquire(c, "m", wttl) })
			goWait(wctx, ch, "semaphore", func(c context.Context) (*distlock.Lease, error) {
				return waiter.Semaphore("s", 3).Acquire(c, wttl, distlock.WithWeight(2))
			})
			goWait(wctx, ch, "reader", func(c context.Context) (*distlock.Lease, error) { return waiter.RWMutex("rw").RLock(c, wttl) })
			goWait(wctx, ch, "election", func(c context.Context) (*distlock.Lease, error) {
				l, err := waiter.Campaign(c, "e", "second", wttl)
				if err != nil {
					return nil, err
				}
				return l.Lease(), nil
			})
			latchDone := make(chan error, 1)
			go func() { latchDone <- waiter.CountDownLatch("l").Wait(wctx) }()
			queuedOn(t, "m", 1, func() (distlock.Info, error) { return other.Inspect(ctx, "m") })
			queuedOn(t, "e", 1, func() (distlock.Info, error) { return other.Inspect(ctx, "e") })
			queuedOn(t, "s", 1, func() (distlock.Info, error) { return other.Semaphore("s", 3).Inspect(ctx) })
			queuedOn(t, "rw", 1, func() (distlock.Info, error) { return other.RWMutex("rw").Inspect(ctx) })
			highest := max(mutex.Token(), permits.Token(), writer.Token(), first.Term())

			m := cl.Members[x]
			t.Logf("stopping %s (the %s), the waiters' only member", m.Name, which)
			m.Stop()
			t.Cleanup(m.Cont)
			if which == "leader" {
				leaderAmong(t, cl, 30*time.Second, y, z)
			}
			// The waiters' entries expire meanwhile (WaiterTTL).
			for _, what := range []string{"m", "e"} {
				queuedOn(t, what, 0, func() (distlock.Info, error) { return other.Inspect(ctx, what) })
			}
			queuedOn(t, "s", 0, func() (distlock.Info, error) { return other.Semaphore("s", 3).Inspect(ctx) })
			queuedOn(t, "rw", 0, func() (distlock.Info, error) { return other.RWMutex("rw").Inspect(ctx) })
			for _, l := range []*distlock.Lease{mutex, permits, writer} {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := first.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := other.CountDownLatch("l").CountDown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case r := <-ch:
				t.Fatalf("%s served through a stopped member: %v", r.what, r.err)
			default:
			}
			m.Cont()
			contd := time.Now()
			const bound = 20 * time.Second
			timeout := time.After(bound)
			var second uint64
			for range 4 {
				select {
				case r := <-ch:
					if r.err != nil {
						t.Fatalf("%s after the member continued: %v", r.what, r.err)
					}
					defer func() { _ = r.lease.Release(context.Background()) }()
					t.Logf("%s served %v after the continue, token %d (highest before %d)", r.what, r.at.Sub(contd), r.token, highest)
					if r.token <= highest {
						t.Errorf("%s: token %d not above %d", r.what, r.token, highest)
					}
					if r.what == "election" {
						second = r.token
					}
				case <-timeout:
					t.Fatalf("waiters not served within %v of the continue", bound)
				}
			}
			select {
			case err := <-latchDone:
				if err != nil {
					t.Fatalf("latch Wait: %v", err)
				}
				t.Logf("latch waiter woken %v after the continue", time.Since(contd))
			case <-time.After(bound):
				t.Fatalf("latch Wait not woken within %v of the continue", bound)
			}
			terms.until(t, second, bound)
		})
	}
}

// watchStreams returns how many watch streams member i serves, from its
// metrics.
func watchStreams(t *testing.T, cl *etcdtest.Cluster, i int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cl.Members[i].Client+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_debugging_mvcc_watch_stream_total "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metrics: %q: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatalf("member %d: no watch_stream_total in its metrics", i)
	return 0
}

// TestStrangerFailoverStoppedWatchMember: a Client connected to every
// member waits on a latch and observes an election; its engine's one
// watch stream is on some member, which is SIGSTOPped (a follower, or the
// leader). Through the other members the latch is counted down to zero
// and the election changes hands. The waiter must be woken and the
// observer must report the new term within watchBound of the change,
// while the member stays stopped (a stop is a partition the kernel does
// not report: no RST, the connection stays open).
func TestStrangerFailoverStoppedWatchMember(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			cl := etcdtest.Start(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			lead, err := cl.Leader(cl.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			// The watch stream goes to whichever member the balancer
			// picks: the Client starts connected to the member this case
			// stops alone, and learns every member's address once its
			// watch is open there (an open stream stays on its
			// connection); should the stream land elsewhere all the same,
			// try again with a fresh Client.
			want := (lead + 1) % 3
			if which == "leader" {
				want = lead
			}
			const ttl = 20 * time.Second // the observer's expiry timer must not stand in for the watch
			holder := memberClient(t, cl, (want+1)%3, (want+2)%3)
			first, err := holder.Campaign(ctx, "e", "first", distlock.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := holder.CountDownLatch("l").TrySetCount(ctx, 1); err != nil || !ok {
				t.Fatalf("TrySetCount: %v, %v", ok, err)
			}
			var (
				terms     *termLog
				latchDone chan error
				wcancel   context.CancelFunc
			)
			for try := 0; ; try++ {
				if try == 30 {
					t.Fatalf("the watch stream never went to member %d", want)
				}
				cli := defaultConfigClient(t, cl, cl.Members[want].Client)
				c := distlock.New(etcdengine.New(cli))
				var wctx context.Context
				wctx, wcancel = context.WithCancel(ctx)
				leaders, err := c.Observe(wctx, "e")
				if err != nil {
					t.Fatal(err)
				}
				terms = observeTerms(leaders)
				terms.until(t, first.Term(), 10*time.Second)
				latchDone = make(chan error, 1)
				go func() { latchDone <- c.CountDownLatch("l").Wait(wctx) }()
				on := -1
				waitFor(t, 10*time.Second, "the watch stream", func() bool {
					for i := range cl.Members {
						if watchStreams(t, cl, i) > 0 {
							on = i
							return true
						}
					}
					return false
				})
				cli.SetEndpoints(cl.Endpoints()...)
				if on == want && watchStreams(t, cl, want) > 0 {
					t.Cleanup(func() { wcancel(); _ = c.Close() })
					break
				}
				wcancel()
				_ = c.Close()
				<-latchDone
				waitFor(t, 10*time.Second, "the old watch stream closed", func() bool { return watchStreams(t, cl, on) == 0 })
			}
			m := cl.Members[want]
			t.Logf("stopping %s (the %s), which serves the waiter's watch", m.Name, which)
			m.Stop()
			t.Cleanup(m.Cont)
			if which == "leader" {
				leaderAmong(t, cl, 30*time.Second, (want+1)%3, (want+2)%3)
			}
			changed := time.Now()
			if err := holder.CountDownLatch("l").CountDown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := first.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			second, err := holder.Campaign(ctx, "e", "second", distlock.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-latchDone:
				if err != nil {
					t.Fatalf("latch Wait: %v", err)
				}
				t.Logf("latch waiter woken %v after the count reached zero", time.Since(changed))
			case <-time.After(watchBound):
				t.Errorf("latch Wait not woken within %v of the count reaching zero, its watch's member stopped", watchBound)
			}
			terms.until(t, second.Term(), watchBound-time.Since(changed))
			t.Logf("observer reported term %d %v after the change", second.Term(), time.Since(changed))
		})
	}
}

// defaultConfigClient is an etcd client of every member (or of the
// endpoints eps, when given) configured as docs/ETCD.md's example is: no
// gRPC keepalive, so a connection to a stopped member is never given up
// by gRPC.
func defaultConfigClient(t *testing.T, cl *etcdtest.Cluster, eps ...string) *clientv3.Client {
	t.Helper()
	if len(eps) == 0 {
		eps = cl.Endpoints()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// watchBound is how soon a Client whose watch's member was stopped must
// hear of a change: the engine's detection of the silent stream (at most
// probeEvery and a tick, then an attempt deadline: 5 s), a new watch that
// may go to the stopped member again (an attempt deadline), a read that
// may too (another).
const watchBound = 15 * time.Second

// watchStreamsStarted returns how many Watch streams member i has
// started since it began, from its gRPC metrics.
func watchStreamsStarted(t *testing.T, cl *etcdtest.Cluster, i int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cl.Members[i].Client+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "grpc_server_started_total{") && strings.Contains(line, `grpc_method="Watch"`) {
			f := strings.Fields(line)
			n, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metrics: %q: %v", line, err)
			}
			return int(n)
		}
	}
	return 0
}

// TestStrangerFailoverWatchProbeQuiet: the probe that finds a silent watch
// stream (see TestStrangerFailoverStoppedWatchMember) leaves a live one
// alone: a latch Wait on a healthy cluster, with nothing happening, keeps
// its one watch stream through several probe periods (no stream is
// started anywhere meanwhile), and is still woken by the CountDown.
func TestStrangerFailoverWatchProbeQuiet(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := distlock.New(etcdengine.New(defaultConfigClient(t, cl)))
	t.Cleanup(func() { _ = c.Close() })
	other := memberClient(t, cl, 0)
	if ok, err := other.CountDownLatch("l").TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.CountDownLatch("l").Wait(ctx) }()
	total := func() int {
		n := 0
		for i := range cl.Members {
			n += watchStreamsStarted(t, cl, i)
		}
		return n
	}
	waitFor(t, 10*time.Second, "the watch stream", func() bool { return total() > 0 })
	started := total()
	// Several probe periods of silence: each one is probed, and
	// answered.
	quiet := time.Now().Add(4 * 2 * time.Second)
	for time.Now().Before(quiet) {
		if n := total(); n != started {
			t.Fatalf("watch streams started while nothing happened: %d, then %d: the probe replaced a live stream", started, n)
		}
		select {
		case err := <-done:
			t.Fatalf("Wait returned with the count at 1: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := other.CountDownLatch("l").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait not woken by the CountDown")
	}
	t.Logf("%d watch stream(s) started, none more through %v of silence", started, 8*time.Second)
}

// TestStrangerFailoverHalfReachable: a holder connected to two members,
// one of which (a follower, or the leader) is SIGSTOPped, with the
// shortest ttl etcd keeps (2 s): its renewals that go to the stopped
// member run out of their attempt deadline and are sent again to the
// other, so the mutex, the permit, the reader and the leadership are
// renewed, several times, and never lost, while a majority answers (with
// the leader stopped, a ttl that outlasts the election: see below).
func TestStrangerFailoverHalfReachable(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			cl := etcdtest.Start(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			lead, err := cl.Leader(cl.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			x, live := (lead+1)%3, lead
			if which == "leader" {
				x, live = lead, (lead+1)%3
			}
			holder := memberClient(t, cl, x, live)
			// With the leader stopped, renewals wait for an election (1 to
			// 2 election timeouts, 1-2 s here): a 2 s lease may be lost
			// meanwhile (told at its deadline, as documented), so that
			// case holds for 6 s.
			ttl := 2 * time.Second
			if which == "leader" {
				ttl = 6 * time.Second
			}
			wttl := distlock.WithTTL(ttl)
			mutex, err := holder.Acquire(ctx, "m", wttl)
			if err != nil {
				t.Fatal(err)
			}
			permit, err := holder.Semaphore("s", 2).Acquire(ctx, wttl)
			if err != nil {
				t.Fatal(err)
			}
			reader, err := holder.RWMutex("rw").RLock(ctx, wttl)
			if err != nil {
				t.Fatal(err)
			}
			leader, err := holder.Campaign(ctx, "e", "v", wttl)
			if err != nil {
				t.Fatal(err)
			}
			held := map[string]*distlock.Lease{"mutex": mutex, "permit": permit, "reader": reader, "leader": leader.Lease()}
			m := cl.Members[x]
			t.Logf("stopping %s (the %s)", m.Name, which)
			m.Stop()
			t.Cleanup(m.Cont)
			stopped := time.Now()
			// Three ttls with the member stopped: every lease confirms a
			// renewal sent after each ttl.
			for i := 1; i <= 3; i++ {
				after := stopped.Add(time.Duration(i) * ttl)
				waitFor(t, 2*ttl, "three ttls", func() bool { return time.Now().After(after) })
				for what, l := range held {
					waitRenewedAfter(t, l, after)
					if err := l.Err(); err != nil {
						t.Fatalf("%s lost %v after the stop with a majority answering: %v", what, time.Since(stopped), err)
					}
				}
			}
			t.Logf("all renewed through %v with %s stopped", time.Since(stopped).Round(time.Millisecond), m.Name)
		})
	}
}

// TestStrangerFailoverProclaimAndExtend: with the leader SIGSTOPped (or
// SIGKILLed) right before, a leader's Proclaim and a holder's Extend to a
// new ttl go through the election: Proclaim keeps the term and the
// observer on a follower reports the new value with it (terms never down);
// Extend keeps the token, Lease.TTL reports the new ttl, and Inspect
// through another member shows the same holder, token and ttl.
func TestStrangerFailoverProclaimAndExtend(t *testing.T) {
	for _, mode := range []string{"kill", "stop"} {
		t.Run(mode, func(t *testing.T) {
			cl := etcdtest.Start(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			lead, err := cl.Leader(cl.Client(t))
			if err != nil {
				t.Fatal(err)
			}
			a := (lead + 1) % 3
			holder := newClient(t, cl)
			observer := memberClient(t, cl, a)
			wttl := distlock.WithTTL(6 * time.Second)
			ld, err := holder.Campaign(ctx, "e", "v1", wttl)
			if err != nil {
				t.Fatal(err)
			}
			l, err := holder.Acquire(ctx, "m", wttl)
			if err != nil {
				t.Fatal(err)
			}
			leaders, err := observer.Observe(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var seen []distlock.Leader
			go func() {
				for x := range leaders {
					mu.Lock()
					seen = append(seen, x)
					mu.Unlock()
				}
			}()
			m := cl.Members[lead]
			switch mode {
			case "kill":
				m.Kill()
			case "stop":
				m.Stop()
				t.Cleanup(m.Cont)
			}
			pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
			if err := ld.Proclaim(pctx, "v2"); err != nil {
				t.Fatalf("Proclaim across the leader's %s: %v", mode, err)
			}
			if err := l.Extend(pctx, 12*time.Second); err != nil {
				t.Fatalf("Extend across the leader's %s: %v", mode, err)
			}
			pcancel()
			if ld.Value() != "v2" || ld.Err() != nil || l.Err() != nil || l.TTL() != 12*time.Second {
				t.Fatalf("after: value %q, %v; lease %v, ttl %v", ld.Value(), ld.Err(), l.Err(), l.TTL())
			}
			waitFor(t, 15*time.Second, "the observer reporting v2", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) > 0 && seen[len(seen)-1].Value == "v2"
			})
			mu.Lock()
			for i, x := range seen {
				if x.Term != ld.Term() {
					t.Errorf("observer report %d: %+v, want term %d throughout", i, x, ld.Term())
				}
			}
			t.Logf("observer reported %+v", seen)
			mu.Unlock()
			in, err := observer.Inspect(ctx, "m")
			if err != nil || in.Owner != l.Owner() || in.Token != l.Token() || in.TTL <= 6*time.Second {
				t.Fatalf("Inspect after the Extend: %+v, %v; want owner %s, token %d, ttl above 6 s", in, err, l.Owner(), l.Token())
			}
			now, err := observer.Leader(ctx, "e")
			if err != nil || now.Term != ld.Term() || now.Value != "v2" {
				t.Fatalf("Leader after Proclaim: %+v, %v", now, err)
			}
			waitRenewedAfter(t, l, time.Now())
			if l.Err() != nil || ld.Err() != nil {
				t.Fatalf("lost after: %v, %v", l.Err(), ld.Err())
			}
		})
	}
}

// TestStrangerFailoverLeaderStopsUnderLoad: two Clients on every member
// take a mutex and a semaphore's single permit from each other in a loop
// while the leader is SIGSTOPped and continued three times (a grant or a
// release may be on the wire to it each time): no two holders overlap,
// tokens increase, both keep being granted, and once they stop nothing of
// theirs stays behind (no holder, no waiter) beyond a ttl.
func TestStrangerFailoverLeaderStopsUnderLoad(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ttl = 3 * time.Second
	type lock struct {
		name string
		take func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error)
	}
	locks := []lock{
		{"m", func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
			return c.Acquire(ctx, "m", distlock.WithTTL(ttl))
		}},
		{"s", func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
			return c.Semaphore("s", 1).Acquire(ctx, distlock.WithTTL(ttl))
		}},
	}
	hs := make([]*holds, len(locks))
	var total atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for li, lk := range locks {
		hs[li] = &holds{}
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
					l, err := lk.take(c, actx)
					acancel()
					if err != nil {
						if ctx.Err() == nil {
							t.Logf("%s client %d: %v (again)", lk.name, i, err)
						}
						continue
					}
					total.Add(1)
					hs[li].work(ctx, fmt.Sprintf("%s client %d", lk.name, i), l, time.Now(), 20*time.Millisecond)
				}
			}()
		}
	}
	progress := func(what string) {
		from := total.Load()
		waitFor(t, 60*time.Second, "grants "+what, func() bool { return total.Load() >= from+6 })
	}
	for round := range 3 {
		progress(fmt.Sprintf("before stop %d", round))
		lead, err := cl.Leader(cl.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		m := cl.Members[lead]
		m.Stop()
		t.Logf("round %d: stopped the leader %s", round, m.Name)
		leaderAmong(t, cl, 30*time.Second, (lead+1)%3, (lead+2)%3)
		progress(fmt.Sprintf("with %s stopped", m.Name))
		m.Cont()
		cl.WaitReady(30 * time.Second)
	}
	progress("after the last continue")
	close(stop)
	wg.Wait()
	ended := time.Now()
	t.Logf("%d grants", total.Load())
	for _, h := range hs {
		h.check(t)
	}
	direct := cl.Client(t)
	waitFor(t, ttl+5*time.Second, "nothing left under the names", func() bool {
		return len(keysUnder(t, direct, "distlock/m/")) == 0 && len(keysUnder(t, direct, "distlock/s/h/")) == 0 &&
			len(keysUnder(t, direct, "distlock/s/sq/")) == 0
	})
	t.Logf("names empty %v after the last release", time.Since(ended).Round(time.Millisecond))
}
