package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// sentinelClient returns a Client on an engine of its own over a go-redis
// failover client of g (as another process would have); both are closed
// when the test ends.
func sentinelClient(t *testing.T, g *redistest.Sentinel, opts ...distlock.ClientOption) *distlock.Client {
	t.Helper()
	eng, err := redisengine.New(g.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	c := distlock.New(eng, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// replicated waits until the replica of g acknowledged every write the
// master made so far (WAIT 1).
func replicated(t *testing.T, g *redistest.Sentinel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := g.Master.Client().Do(ctx, "wait", 1, 5000).Int()
	if err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}
}

// subscribers returns the number of subscribers of the channels matching
// pattern on srv (PUBSUB CHANNELS, PUBSUB NUMSUB).
func subscribers(ctx context.Context, srv *redistest.Server, pattern string) int {
	chans, err := srv.Client().PubSubChannels(ctx, pattern).Result()
	if err != nil || len(chans) == 0 {
		return 0
	}
	counts, err := srv.Client().PubSubNumSub(ctx, chans...).Result()
	if err != nil {
		return 0
	}
	n := 0
	for _, c := range counts {
		n += int(c)
	}
	return n
}

// TestStrangerSentinelStoppedMasterWakeups: a Client waits on a Sentinel
// deployment, subscribed on the master, for a latch to open, for an
// election's leader, and in a mutex's queue; then the master is stopped
// (SIGSTOP: its sockets stay open, as with a master cut off by the network)
// and Sentinel fails over to the replica, which has every write
// (WAIT 1). After the failover, another Client counts the latch down,
// campaigns, and the mutex's holder releases, all on the new master. The
// waiting Client must learn each within a few seconds (its subscription
// moved to the new master), not hang until the old master comes back.
func TestStrangerSentinelStoppedMasterWakeups(t *testing.T) {
	t.Run("forced", func(t *testing.T) { stoppedMasterWakeups(t, false) })
	// The sentinels notice the stopped master on their own (after
	// redistest.SentinelDownAfter) and fail it over.
	t.Run("automatic", func(t *testing.T) { stoppedMasterWakeups(t, true) })
}

func stoppedMasterWakeups(t *testing.T, automatic bool) {
	g := redistest.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waiter := sentinelClient(t, g)
	other := sentinelClient(t, g)

	// The holder's lease outlasts an automatic failover.
	holder, err := other.Acquire(ctx, "m", distlock.WithTTL(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	latch := waiter.CountDownLatch("l")
	if ok, err := latch.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	latchDone := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		latchDone <- latch.Wait(wctx)
	}()
	leaders, err := waiter.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		lease *distlock.Lease
		err   error
	}
	acquired := make(chan got, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		l, err := waiter.Acquire(actx, "m", distlock.WithTTL(10*time.Second))
		acquired <- got{l, err}
	}()
	// The waiter's subscriptions are on the master: the latch's and the
	// election's channels, and the mutex queue's wake-up channel.
	enginetest.WaitFor(t, 10*time.Second, "the waiter's subscriptions", func() bool {
		return subscribers(ctx, g.Master, "*{l}") >= 1 && subscribers(ctx, g.Master, "*{e}") >= 1 &&
			subscribers(ctx, g.Master, "*{m}:w:*") >= 1
	})
	enginetest.WaitFor(t, 10*time.Second, "the waiter in the queue", func() bool {
		n, _ := g.Master.Client().ZCard(ctx, "distlock:{m}:q").Result()
		return n == 1
	})
	replicated(t, g)

	if err := g.Master.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Master.Resume() }() // so that Close finds it running
	if automatic {
		enginetest.WaitFor(t, 3*redistest.SentinelDownAfter, "the sentinels' own failover", func() bool {
			addr, err := g.MasterAddr(ctx)
			return err == nil && addr == g.Replica.Addr() &&
				strings.Contains(g.Replica.Client().Info(ctx, "replication").Val(), "role:master")
		})
	} else {
		g.Failover(t)
	}
	failedOver := time.Now()

	// On the new master: the latch opens, a leader is elected, the mutex is
	// released.
	if err := other.CountDownLatch("l").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	lead, err := other.Campaign(ctx, "e", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lead.Resign(context.Background()) }()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}

	const bound = 10 * time.Second
	var mu sync.Mutex
	var failures []string
	fail := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, a...))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case err := <-latchDone:
			if err != nil {
				fail("latch Wait: %v", err)
			}
			t.Logf("latch Wait returned %v after the failover", time.Since(failedOver))
		case <-time.After(bound):
			fail("latch Wait still waiting %v after the failover and the CountDown", bound)
		}
	})
	wg.Go(func() {
		timer := time.After(bound)
		for {
			select {
			case l := <-leaders:
				if l.Term == lead.Term() {
					t.Logf("Observe saw term %d after %v", l.Term, time.Since(failedOver))
					return
				}
				if l.Term > lead.Term() {
					fail("Observe saw term %d above the leader's %d", l.Term, lead.Term())
					return
				}
			case <-timer:
				fail("Observe did not report leader term %d within %v of the failover", lead.Term(), bound)
				return
			}
		}
	})
	wg.Go(func() {
		select {
		case r := <-acquired:
			if r.err != nil {
				fail("queued Acquire: %v", r.err)
				return
			}
			t.Logf("queued waiter took the mutex %v after the failover, token %d (holder's %d)", time.Since(failedOver), r.lease.Token(), holder.Token())
			if r.lease.Token() <= holder.Token() {
				fail("queued waiter's token %d not above the holder's %d", r.lease.Token(), holder.Token())
			}
			_ = r.lease.Release(ctx)
		case <-time.After(bound):
			fail("queued Acquire still waiting %v after the failover and the release", bound)
		}
	})
	wg.Wait()
	if len(failures) > 0 {
		t.Fatal(strings.Join(failures, "\n"))
	}
}

// TestStrangerSentinelKindsAcrossFailover: every lock kind held on a
// Sentinel deployment, with waiters queued behind each, across a failover
// to a replica that has every write (WAIT 1): the master SIGKILLed, or
// SIGSTOPped and continued after the failover (it comes back as a stale
// master and is made a replica). The holders keep their leases (a renewal
// is confirmed by the new master), the latch keeps its count, and once the
// holders let go, every waiter queued before the failover is served within
// a few seconds, with a token above every earlier one; the election's term
// goes up and an observer's terms never go down.
func TestStrangerSentinelKindsAcrossFailover(t *testing.T) {
	for _, mode := range []string{"kill", "stop"} {
		t.Run(mode, func(t *testing.T) {
			g := redistest.StartSentinel(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			holder, waiter, observer := sentinelClient(t, g), sentinelClient(t, g), sentinelClient(t, g)
			const ttl = 10 * time.Second
			wttl := distlock.WithTTL(ttl)

			mutex, err := holder.Acquire(ctx, "m", wttl)
			if err != nil {
				t.Fatal(err)
			}
			sem := holder.Semaphore("s", 2)
			var permits []*distlock.Lease
			for range 2 {
				p, err := sem.Acquire(ctx, wttl)
				if err != nil {
					t.Fatal(err)
				}
				permits = append(permits, p)
			}
			reader, err := holder.RWMutex("rw").RLock(ctx, wttl)
			if err != nil {
				t.Fatal(err)
			}
			leader, err := holder.Campaign(ctx, "e", "first", wttl)
			if err != nil {
				t.Fatal(err)
			}
			latch := holder.CountDownLatch("l")
			if ok, err := latch.TrySetCount(ctx, 3); err != nil || !ok {
				t.Fatalf("TrySetCount: %v, %v", ok, err)
			}
			if err := latch.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
			leaders, err := observer.Observe(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}

			// The waiters, each queued before the failover.
			type got struct {
				what  string
				token uint64
				err   error
				at    time.Time
			}
			served := make(chan got, 5)
			wait := func(what string, f func(context.Context) (uint64, error)) {
				go func() {
					wctx, cancel := context.WithTimeout(ctx, time.Minute)
					defer cancel()
					tok, err := f(wctx)
					served <- got{what, tok, err, time.Now()}
				}()
			}
			lease := func(l *distlock.Lease, err error) (uint64, error) {
				if err != nil {
					return 0, err
				}
				return l.Token(), nil
			}
			wait("mutex", func(c context.Context) (uint64, error) { return lease(waiter.Acquire(c, "m", wttl)) })
			wait("semaphore", func(c context.Context) (uint64, error) { return lease(waiter.Semaphore("s", 2).Acquire(c, wttl)) })
			wait("writer", func(c context.Context) (uint64, error) { return lease(waiter.RWMutex("rw").Lock(c, wttl)) })
			wait("election", func(c context.Context) (uint64, error) {
				l, err := waiter.Campaign(c, "e", "second", wttl)
				if err != nil {
					return 0, err
				}
				return l.Term(), nil
			})
			wait("latch", func(c context.Context) (uint64, error) { return 0, waiter.CountDownLatch("l").Wait(c) })
			queued := func(name string, info func() (distlock.Info, error)) {
				enginetest.WaitFor(t, 10*time.Second, name+"'s waiter queued", func() bool {
					in, err := info()
					return err == nil && in.Waiters == 1
				})
			}
			for _, name := range []string{"m", "e"} {
				queued(name, func() (distlock.Info, error) { return observer.Inspect(ctx, name) })
			}
			queued("s", func() (distlock.Info, error) { return observer.Semaphore("s", 2).Inspect(ctx) })
			queued("rw", func() (distlock.Info, error) { return observer.RWMutex("rw").Inspect(ctx) })
			enginetest.WaitFor(t, 10*time.Second, "the latch's waiter subscribed", func() bool {
				return subscribers(ctx, g.Master, "*{l}") >= 1
			})
			before := []uint64{mutex.Token(), permits[0].Token(), permits[1].Token(), reader.Token(), leader.Term()}
			var highest uint64
			for _, tok := range before {
				highest = max(highest, tok)
			}
			replicated(t, g)

			switch mode {
			case "kill":
				if err := g.Master.Kill(); err != nil {
					t.Fatal(err)
				}
			case "stop":
				if err := g.Master.Pause(); err != nil {
					t.Fatal(err)
				}
			}
			g.Failover(t)
			failedOver := time.Now()
			if mode == "stop" {
				// The old master comes back, a master with stale
				// connections, and Sentinel makes it a replica.
				if err := g.Master.Resume(); err != nil {
					t.Fatal(err)
				}
				enginetest.WaitFor(t, 30*time.Second, "the old master made a replica", func() bool {
					return strings.Contains(g.Master.Client().Info(ctx, "replication").Val(), "master_link_status:up")
				})
			}

			// The holders keep their leases: a renewal confirmed by the new
			// master moves each deadline past the failover.
			held := map[string]*distlock.Lease{"mutex": mutex, "permit 1": permits[0], "permit 2": permits[1], "reader": reader, "leader": leader.Lease()}
			for what, l := range held {
				enginetest.WaitFor(t, ttl, what+" renewed after the failover", func() bool {
					return l.Err() == nil && l.Deadline().After(failedOver.Add(ttl*9/10))
				})
			}
			if n, err := observer.CountDownLatch("l").Count(ctx); err != nil || n != 2 {
				t.Fatalf("latch count after the failover: %d, %v; want 2", n, err)
			}
			select {
			case r := <-served:
				t.Fatalf("%s served while everything was held: %v", r.what, r.err)
			default:
			}

			// Let go.
			for _, l := range []*distlock.Lease{mutex, permits[0], reader} {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := leader.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := observer.CountDownLatch("l").CountDown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			released := time.Now()
			const bound = 10 * time.Second
			timeout := time.After(bound)
			var secondTerm uint64
			for range 5 {
				select {
				case r := <-served:
					if r.err != nil {
						t.Fatalf("%s after the failover: %v", r.what, r.err)
					}
					t.Logf("%s served %v after the release, token %d (highest before the failover %d)", r.what, r.at.Sub(released), r.token, highest)
					if r.what != "latch" && r.token <= highest {
						t.Fatalf("%s: token %d not above %d, handed out before the failover", r.what, r.token, highest)
					}
					if r.what == "election" {
						secondTerm = r.token
					}
				case <-timeout:
					t.Fatalf("queued waiters not served within %v of the release", bound)
				}
			}
			// The observer saw first's term, then second's, never going down.
			var last uint64
			timeout = time.After(bound)
			for last != secondTerm {
				select {
				case l := <-leaders:
					if l.Term != 0 && l.Term < last {
						t.Fatalf("observer's term went down: %d after %d", l.Term, last)
					}
					if l.Term != 0 {
						last = l.Term
					}
				case <-timeout:
					t.Fatalf("observer did not report term %d within %v (last %d)", secondTerm, bound, last)
				}
			}
			_ = permits[1].Release(ctx)
		})
	}
}

// TestStrangerSentinelLostGrants: the failover loses grants (the replica is
// cut off first, as README's guarantees allow): a mutex released and taken
// by another holder, and an election's leader resigned and succeeded, on
// the old master only. After Sentinel fails over to the replica (which
// still has the first holder's and the first leader's records), the
// holders whose grants were lost are told so within their ttl, and stay
// told; nobody else is granted the mutex or elected before they are told;
// the next grant's token and the next term are above every one handed out
// before (the time floor); and the observer's terms never go down, though
// the new master's records are older than what it reported.
func TestStrangerSentinelLostGrants(t *testing.T) {
	g := redistest.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1, c2, obs := sentinelClient(t, g), sentinelClient(t, g), sentinelClient(t, g)
	const ttl = 6 * time.Second
	wttl := distlock.WithTTL(ttl)

	l1, err := c1.Campaign(ctx, "e", "one", wttl)
	if err != nil {
		t.Fatal(err)
	}
	h1, err := c1.Acquire(ctx, "m", wttl)
	if err != nil {
		t.Fatal(err)
	}
	leaders, err := obs.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var terms []uint64
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for l := range leaders {
			mu.Lock()
			terms = append(terms, l.Term)
			mu.Unlock()
		}
	}()
	seen := func(term uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(terms) > 0 && terms[len(terms)-1] == term
	}
	enginetest.WaitFor(t, 10*time.Second, "the observer sees the first leader", func() bool { return seen(l1.Term()) })
	replicated(t, g)
	if err := g.CutReplica(ctx); err != nil {
		t.Fatal(err)
	}
	// On the old master only: the first holder and leader let go, the
	// second take over.
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := c2.Campaign(ctx, "e", "two", wttl)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := c2.Acquire(ctx, "m", wttl)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 10*time.Second, "the observer sees the second leader", func() bool { return seen(l2.Term()) })

	if err := g.Master.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := g.Replica.Resume(); err != nil {
		t.Fatal(err)
	}
	g.Failover(t)
	failedOver := time.Now()

	// A newcomer: waits out the stale records the new master kept, and
	// must find every lost holder told before it holds.
	c3 := sentinelClient(t, g)
	h3, err := c3.Acquire(ctx, "m", wttl)
	if err != nil {
		t.Fatal(err)
	}
	h3At := time.Now()
	if h2.Err() == nil {
		t.Fatalf("the newcomer holds the mutex (token %d) while the lost holder (token %d) is not told", h3.Token(), h2.Token())
	}
	l3, err := c3.Campaign(ctx, "e", "three", wttl)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Err() == nil {
		t.Fatalf("a new leader (term %d) while the lost one (term %d) is not told", l3.Term(), l2.Term())
	}
	t.Logf("newcomer held the mutex %v after the failover; lost holder told: %v", h3At.Sub(failedOver), h2.Err())
	var lost *distlock.LostError
	for what, l := range map[string]*distlock.Lease{"holder": h2, "leader": l2.Lease()} {
		if !errors.As(l.Err(), &lost) {
			t.Fatalf("the lost %s: %v, want a *LostError", what, l.Err())
		}
		select {
		case <-l.Done():
		default:
			t.Fatalf("the lost %s's Done is open", what)
		}
	}
	if h3.Token() <= h2.Token() || l3.Term() <= l2.Term() {
		t.Fatalf("after the failover token %d (lost %d), term %d (lost %d): not above", h3.Token(), h2.Token(), l3.Term(), l2.Term())
	}
	enginetest.WaitFor(t, 10*time.Second, "the observer sees the third leader", func() bool { return seen(l3.Term()) })
	cancel()
	<-observed
	var last uint64
	for _, term := range terms {
		if term != 0 && term < last {
			t.Fatalf("the observer's terms went down: %v", terms)
		}
		last = max(last, term)
	}
	t.Logf("observer's terms: %v", terms)
}

// TestStrangerSentinelLatchLostWrites: what an asynchronous failover does to
// countdown latches (docs/REDIS.md): the replica is cut off, then on the
// old master latch a is counted down once and latch b is set; the master
// is killed and Sentinel fails over to the replica. After it a's count is
// back up by the lost CountDown (one more is needed), and b was never set:
// its count reads 0 and a Wait that began before the failover returns
// nil, though nobody counted b down.
func TestStrangerSentinelLatchLostWrites(t *testing.T) {
	g := redistest.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, waiter := sentinelClient(t, g), sentinelClient(t, g)
	a, b := c.CountDownLatch("a"), c.CountDownLatch("b")
	if ok, err := a.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount a: %v, %v", ok, err)
	}
	replicated(t, g)
	if err := g.CutReplica(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount b: %v, %v", ok, err)
	}
	if n, err := a.Count(ctx); err != nil || n != 1 {
		t.Fatalf("a's count before the failover: %d, %v; want 1", n, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- waiter.CountDownLatch("b").Wait(ctx) }()
	enginetest.WaitFor(t, 10*time.Second, "b's waiter subscribed", func() bool { return subscribers(ctx, g.Master, "*{b}") >= 1 })
	select {
	case err := <-waited:
		t.Fatalf("b's Wait returned before the failover: %v", err)
	default:
	}

	if err := g.Master.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := g.Replica.Resume(); err != nil {
		t.Fatal(err)
	}
	g.Failover(t)
	if n, err := a.Count(ctx); err != nil || n != 2 {
		t.Fatalf("a's count after the failover: %d, %v; want 2 (the CountDown lost)", n, err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("b's Wait after the failover: %v; want nil (its count was lost)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b's Wait did not return within 10 s of the failover")
	}
}
