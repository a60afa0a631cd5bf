package zookeeper_test

// A stranger's tests of the less-travelled kinds on ZooKeeper, through the
// public Client: enginetest.RunKindsAcross (latches, elections, semaphores
// with SetLimit racing acquires, RW locks across members, AcquireAll over
// names held as other kinds, the admin calls on those kinds; also run on
// etcd), the latch across ZooKeeper's own faults (a leader kill, a
// majority stopped) and a session's member stopped; on the shared
// ensembles of one member (in parallel with the other tests) and of three
// (the faults: not parallel, after TestFaults).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/internal/stallproxy"
)

// TestStrangerKindsZK3 runs the kinds on three members, a Client on each,
// then the latch's faults (a leader killed and restarted, two members
// stopped). Not parallel: it stops members of the shared ensemble.
func TestStrangerKindsZK3(t *testing.T) {
	ens := shared(t, 3)
	waitServing(t, ens, 2*time.Minute)
	strangerKindsZK(t, ens, true)
	t.Run("StoppedSessionMember", func(t *testing.T) { strangerZKStoppedSessionMember(t, ens) })
	waitServing(t, ens, 2*time.Minute)
	t.Run("LatchAcrossFaults", func(t *testing.T) { strangerZKLatchFaults(t, ens) })
	waitServing(t, ens, 2*time.Minute)
}

// TestStrangerKindsZK1 runs the kinds on one member, three Clients on
// sessions of their own.
func TestStrangerKindsZK1(t *testing.T) {
	t.Parallel()
	strangerKindsZK(t, shared(t, 1), false)
}

func strangerKindsZK(t *testing.T, ens *zktest.Ensemble, three bool) {
	var c []*distlock.Client
	for i := range 3 {
		servers := ens.Servers()
		if three {
			servers = servers[i : i+1]
		}
		cl := distlock.New(dial(t, servers))
		t.Cleanup(func() { _ = cl.Close() })
		c = append(c, cl)
	}
	g := &gatedZK{Engine: dial(t, ens.Servers()), p: &pausable{}}
	a := distlock.New(g)
	t.Cleanup(func() { _ = a.Close() })
	enginetest.RunKindsAcross(t, enginetest.KindsAcross{Clients: c, Admin: dial(t, ens.Servers()),
		Paused: a, PausedEngine: g, Pause: g.p.pause, Resume: g.p.resume, TermTTL: time.Second})
}

// queuedOn waits until info reports n waiters.
func queuedOn(t *testing.T, what string, n int, info func() (distlock.Info, error)) {
	t.Helper()
	enginetest.WaitFor(t, 15*time.Second, fmt.Sprintf("%d waiter(s) queued on %s", n, what), func() bool {
		in, err := info()
		return err == nil && in.Waiters == n
	})
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
	enginetest.WaitFor(t, within, fmt.Sprintf("the observer reporting term %d", term), func() bool { return slices.Contains(seen(), term) })
	var last uint64
	for _, x := range seen() {
		if x != 0 && x < last {
			t.Fatalf("observer's terms went down: %v", seen())
		}
		last = max(last, x)
	}
	t.Logf("observer reported %v", seen())
}

// pausable blocks the calls gated on it while paused.
type pausable struct {
	mu     sync.Mutex
	paused chan struct{} // closed when resumed; nil while running
}

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

func (p *pausable) gate(ctx context.Context) error {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedZK is the ZooKeeper engine whose renewals and releases block while
// p is paused (a stopped process's), every other method its own
// (Proclaim's SetMetadata, the queue, ...).
type gatedZK struct {
	*zkengine.Engine
	p *pausable
}

func (g *gatedZK) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := g.p.gate(ctx); err != nil {
		return nil, err
	}
	return g.Engine.Extend(ctx, rs)
}

func (g *gatedZK) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := g.p.gate(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return g.Engine.Release(ctx, r)
}

func (g *gatedZK) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := g.p.gate(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return g.Engine.ReleaseOnce(ctx, r, id)
}

// strangerZKLatchFaults: a latch through the leader's SIGKILL and restart
// (its count kept, read through every member, a waiter on a follower woken
// at zero) and two members SIGSTOPped: CountDown, Count and TrySetCount
// through the third are errors, never answers; after the continue the
// count is as before, or one less (a CountDown applied late), and it
// reaches zero with the waiter woken.
func strangerZKLatchFaults(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "latch-faults"
	lead := leaderOf(t, ens)
	li, f := 0, 0
	for i, m := range ens.Members {
		if m == lead {
			li = i
		}
	}
	f = (li + 1) % 3
	var c []*distlock.Client
	for i := range 3 {
		cl := distlock.New(dial(t, ens.Servers()[i:i+1]))
		t.Cleanup(func() { _ = cl.Close() })
		c = append(c, cl)
	}
	if ok, err := c[0].CountDownLatch(name).TrySetCount(ctx, 4); err != nil || !ok {
		t.Fatal(ok, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c[f].CountDownLatch(name).Wait(ctx) }()
	lead.Restart()
	ens.WaitReady(60 * time.Second)
	waitServing(t, ens, 2*time.Minute)
	if err := c[li].CountDownLatch(name).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if n, err := c[i].CountDownLatch(name).Count(ctx); err != nil || n != 3 {
			t.Fatalf("count through member %d after the leader's restart: %d, %v; want 3", i, n, err)
		}
	}
	x, y := (f+1)%3, (f+2)%3
	ens.Members[x].Stop()
	ens.Members[y].Stop()
	t.Cleanup(ens.Members[x].Cont)
	t.Cleanup(ens.Members[y].Cont)
	fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
	l := c[f].CountDownLatch(name)
	if err := l.CountDown(fctx); err == nil {
		t.Error("CountDown answered with a majority stopped")
	}
	if n, err := l.Count(fctx); err == nil {
		t.Errorf("Count answered %d with a majority stopped", n)
	}
	if ok, err := c[f].CountDownLatch(name+"-new").TrySetCount(fctx, 2); err == nil {
		t.Errorf("TrySetCount answered %v with a majority stopped", ok)
	}
	fcancel()
	select {
	case err := <-waited:
		t.Fatalf("the Wait returned with a majority stopped: %v", err)
	default:
	}
	ens.Members[x].Cont()
	ens.Members[y].Cont()
	waitServing(t, ens, 2*time.Minute)
	var n int64
	enginetest.WaitFor(t, 60*time.Second, "the latch's count through the member that stayed", func() bool {
		var err error
		n, err = l.Count(ctx)
		return err == nil
	})
	if n != 3 && n != 2 {
		t.Fatalf("count after the continue: %d; want 3 (or 2)", n)
	}
	nl := c[f].CountDownLatch(name + "-new")
	if n2, err := nl.Count(ctx); err == nil && n2 != 0 {
		_ = nl.CountDown(ctx)
		_ = nl.CountDown(ctx)
	}
	select {
	case err := <-waited:
		t.Fatalf("the Wait returned at count %d: %v", n, err)
	default:
	}
	for range n {
		if err := c[x].CountDownLatch(name).CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter not woken within 30 s of zero")
	}
}

// strangerZKStoppedSessionMember: a Client given every member (as a user
// dials an ensemble) whose session is on a member that is SIGSTOPped (a
// hung machine: its connections stay open, nothing is answered) while it
// waits on a latch, observes an election and holds a mutex (ttl 10 s). The
// two other members keep serving: the latch is counted to zero and the
// election changes hands through them. The Wait must be woken and the
// observer must report the new leader within 20 s of the change, and the
// holder's renewals must go on through another member (its ttl outlasts
// the stop's detection): the client library alone moves to another member
// only after two thirds of the session timeout without a packet (80 s for
// the tests' 2-minute sessions, 27 s for Dial's default 40 s).
func strangerZKStoppedSessionMember(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The Client is given the two followers (a stop of the leader would
	// hold an election, which drops every client's connection): its
	// session is on one of them, which is stopped; it should move to the
	// other.
	lead := leaderOf(t, ens)
	var proxies []*proxy
	var addrs []string
	var followers []*zktest.Member
	for _, m := range ens.Members {
		if m != lead {
			p := startProxy(t, m.Addr)
			proxies = append(proxies, p)
			addrs = append(addrs, p.Addr())
			followers = append(followers, m)
		}
	}
	w := distlock.New(dial(t, addrs))
	t.Cleanup(func() { _ = w.Close() })
	// The client connects in the background: its session is on the
	// member whose proxy carried its first bytes.
	var m *zktest.Member
	waitUntil(t, 20*time.Second, "the Client's session on a member", func() bool {
		for i, p := range proxies {
			if p.Sent() > 0 {
				m = followers[i]
			}
		}
		return m != nil
	})
	var others []string
	for _, x := range ens.Members {
		if x != m {
			others = append(others, x.Addr)
		}
	}
	o := distlock.New(dial(t, others))
	t.Cleanup(func() { _ = o.Close() })
	const latch, elect, mutex = "stopped-session-latch", "stopped-session-elect", "stopped-session-mutex"
	if ok, err := o.CountDownLatch(latch).TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatal(ok, err)
	}
	first, err := o.Campaign(ctx, elect, "first", distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held, err := w.Acquire(ctx, mutex, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan time.Time, 1)
	go func() {
		if err := w.CountDownLatch(latch).Wait(ctx); err != nil {
			t.Errorf("Wait: %v", err)
		}
		waited <- time.Now()
	}()
	ch, err := w.Observe(ctx, elect)
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Value
	go func() {
		for l := range ch {
			seen.Store(l)
		}
	}()
	enginetest.WaitFor(t, 20*time.Second, "the observer reporting the first leader", func() bool {
		l, _ := seen.Load().(distlock.Leader)
		return l.Term == first.Term()
	})
	t.Logf("stopping member %d (a follower), the Client's session's", m.ID)
	m.Stop()
	t.Cleanup(m.Cont)
	stopped := time.Now()
	if err := o.CountDownLatch(latch).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := o.Campaign(ctx, elect, "second", distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	t.Logf("latch at zero and a new leader %v after the stop", changed.Sub(stopped).Round(time.Millisecond))
	select {
	case at := <-waited:
		t.Logf("the Wait woken %v after the change", at.Sub(changed).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Errorf("the Wait not woken 20 s after the latch reached zero through the other members")
	}
	enginetest.WaitFor(t, 20*time.Second, "the observer reporting the new leader", func() bool {
		l, _ := seen.Load().(distlock.Leader)
		return l.Term == second.Term()
	})
	// The holder's renewals go on through the other member: one sent
	// after the stop is confirmed (its deadline moves past the stop's
	// plus the ttl), and the lease is never lost.
	ttl := held.TTL()
	enginetest.WaitFor(t, 3*ttl, "a renewal of the holder sent after the stop", func() bool {
		return held.Err() != nil || held.Deadline().After(stopped.Add(ttl-engine.Drift(ttl)))
	})
	if err := held.Err(); err != nil {
		t.Errorf("the holder, its session's member stopped %v ago: %v", time.Since(stopped).Round(time.Millisecond), err)
	}
	m.Cont()
	_ = second.Resign(ctx)
	_ = held.Release(ctx)
}

// TestStrangerDialPastHungServer: a server that accepts connections and
// never answers (a hung machine: its kernel completes the TCP handshake)
// listed beside a live member. The client library shuffles its servers
// and waits for a handshake ten times its read deadline (4.5 minutes with
// Dial's 40 s session, 13 with the tests' 2 minutes), so Dial hung
// whenever the dead one came first. Six Dials, at once, each within 20 s,
// then a latch's round trip on each.
func TestStrangerDialPastHungServer(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			held.Lock()
			conns = append(conns, c) // never read, never answered
			held.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = hole.Close()
		held.Lock()
		defer held.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	servers := []string{hole.Addr().String(), ens.Servers()[0]}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			e, err := zkengine.Dial(ctx, servers, testSession)
			if err != nil {
				t.Errorf("Dial %d, a hung server listed beside a live one: %v after %v", i, err, time.Since(start).Round(time.Millisecond))
				return
			}
			defer e.Close()
			c := distlock.New(e)
			defer c.Close()
			l := c.CountDownLatch(fmt.Sprintf("dial-past-hung-%d", i))
			if ok, err := l.TrySetCount(ctx, 1); err != nil || !ok {
				t.Errorf("Dial %d: TrySetCount: %v, %v", i, ok, err)
				return
			}
			if err := l.CountDown(ctx); err != nil {
				t.Errorf("Dial %d: CountDown: %v", i, err)
			}
			t.Logf("Dial %d: a session and a latch's round trip after %v", i, time.Since(start).Round(time.Millisecond))
		})
	}
	wg.Wait()
	held.Lock()
	t.Logf("the hung server took %d connection(s)", len(conns))
	held.Unlock()
}

// TestStrangerCloseOnHungMember: an engine whose member hangs (its
// connection stalled both ways: nothing answered, nothing refused) with a
// call given up on it (a latch's Count whose context ended) is closed:
// Close waits for the engine's calls, and the given-up one ended only when
// the client library gave up on the connection, two thirds of the session
// timeout later (80 s for the tests' 2-minute session, 27 s for Dial's
// default). Close must return within 20 s.
func TestStrangerCloseOnHungMember(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	p, err := stallproxy.Listen(ens.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	e := dial(t, []string{p.Addr()})
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CountDownLatch("close-on-hung").Count(ctx); err != nil {
		t.Fatal(err)
	}
	p.Pause()
	defer p.Resume()
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.CountDownLatch("close-on-hung").Count(cctx)
	ccancel()
	if err == nil {
		t.Fatal("a Count answered through a stalled connection")
	}
	closed := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		_ = c.Close()
		_ = e.Close()
		closed <- time.Since(start)
	}()
	select {
	case d := <-closed:
		t.Logf("Close returned after %v", d.Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		p.Resume()
		t.Fatalf("Close still waiting 20 s after it was called (returned %v after, once the member answered again)", (<-closed).Round(time.Millisecond))
	}
}

// TestStrangerObserverSessionExpired: a Client whose session expires (its
// connection cut for longer than its 2 s session) while it waits on a latch
// and observes an election; meanwhile the latch reaches zero and the
// election changes hands. Once its connection is back (a new session, its
// watches gone with the old one), the Wait returns and the observer
// reports the new leader, its terms never going down (and its queued
// Acquire, whose place in line went with the session, ends with
// ErrSessionExpired).
func TestStrangerObserverSessionExpired(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	p := startProxy(t, ens.Servers()[0])
	w := distlock.New(dialShort(t, p.Addr()))
	t.Cleanup(func() { _ = w.Close() })
	o := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = o.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const latch, elect, mutex = "expired-observer-latch", "expired-observer-elect", "expired-observer-mutex"
	held, err := o.Acquire(ctx, mutex, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	queued := make(chan error, 1)
	go func() {
		_, err := w.Acquire(ctx, mutex, distlock.WithTTL(shortSession))
		queued <- err
	}()
	queuedOn(t, mutex, 1, func() (distlock.Info, error) { return o.Inspect(ctx, mutex) })
	if ok, err := o.CountDownLatch(latch).TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatal(ok, err)
	}
	first, err := o.Campaign(ctx, elect, "first", distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.CountDownLatch(latch).Wait(ctx) }()
	ch, err := w.Observe(ctx, elect)
	if err != nil {
		t.Fatal(err)
	}
	terms := observeTerms(ch)
	terms.until(t, first.Term(), 20*time.Second)
	p.Freeze()
	if err := o.CountDownLatch(latch).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := o.Campaign(ctx, elect, "second", distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Resign(ctx)
	// The session's expiry, as the ensemble records it: the cut-off
	// Client's place in the line of a held mutex (an ephemeral node) goes.
	enginetest.WaitFor(t, 20*time.Second, "the cut-off Client's place to go with its session", func() bool {
		in, err := o.Inspect(ctx, mutex)
		return err == nil && in.Waiters == 0
	})
	p.Thaw()
	thawed := time.Now()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("the Wait after the session expired: %v", err)
		}
		t.Logf("the Wait returned %v after the connection came back", time.Since(thawed).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("the Wait not woken 20 s after the connection came back with the latch at zero")
	}
	terms.until(t, second.Term(), 20*time.Second)
	if err := <-queued; !errors.Is(err, zkengine.ErrSessionExpired) {
		t.Errorf("the waiter whose session expired: %v, want ErrSessionExpired", err)
	}
}
