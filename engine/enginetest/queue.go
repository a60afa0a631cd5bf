package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// queuer returns a new engine of the backend as an engine.Queuer, or skips
// the test on a backend without a waiter queue (or, with fair, without fair
// waiting).
func (s *suite) queuer(t *testing.T, fair bool) (engine.Engine, engine.Queuer) {
	t.Helper()
	e := s.h.New(t)
	q, ok := e.(engine.Queuer)
	if !ok {
		t.Skip("the engine keeps no waiter queue (engine.Queuer)")
	}
	if fair && !engine.CapabilitiesOf(e).Fair {
		t.Skip("the engine's queue cannot be fair")
	}
	return e, q
}

// heldWithGhost makes a Client hold a new lock name, then puts a ghost in
// its queue: a waiter entered straight on an engine of the backend (ghost's
// Name, Owner, Attempt, TTL and Waiting are filled in), which never
// heartbeats, confirms or leaves, as a waiter whose process died. It skips
// the test on an engine without a fair queue.
func (s *suite) heldWithGhost(t *testing.T, ctx context.Context, ghost engine.AcquireRequest) (name string, holder *distlock.Client, h *distlock.Lease) {
	t.Helper()
	e, _ := s.queuer(t, true)
	name = lockName(t)
	holder = s.client(t)
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ghost.Name, ghost.Owner, ghost.Attempt, ghost.TTL, ghost.Waiting = name, "ghost", "ghost", time.Minute, true
	g, err := e.Acquire(ctx, ghost)
	if err != nil || g.Acquired || !g.Queued || !g.Head {
		t.Fatalf("the ghost's entry: %+v, %v", g, err)
	}
	return name, holder, h
}

// handoffOrder runs workers on Clients made by newClient (on the engines
// it is given, which record their calls), each taking name over and over
// (with opts) until n grants were made or handoffBudget has passed (a slow
// backend on a busy machine makes fewer hand-offs, all judged the same),
// and returns the workers in grant order and each worker's engine. A holder asks for the lock again before
// it releases, and releases once its new call waits: it subscribed and
// tried again after subscribing (counted at the engine), and, with
// counted, Inspect counts every worker as waiting.
func (s *suite) handoffOrder(t *testing.T, newClient func(t *testing.T, e engine.Engine) *distlock.Client, counted bool,
	name string, workers, n int, opts ...distlock.Option) ([]int, []*counting) {
	t.Helper()
	ctx := ctxTimeout(t, handoffBudget+2*time.Minute) // the budget, then the workers' last hand-offs
	stopAt := time.Now().Add(handoffBudget)
	watch := s.client(t)
	opts = append(opts, distlock.WithTTL(10*time.Second))
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	// The first holder keeps the lock until every worker waits.
	h, err := watch.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	engines := make([]*counting, workers)
	clients := make([]*distlock.Client, workers)
	for w := range workers {
		var wrapped engine.Engine
		wrapped, engines[w] = countCalls(s.h.New(t))
		clients[w] = newClient(t, wrapped)
	}
	// asked records a worker's counts when it asks; waits reports whether
	// that call waits now.
	type mark struct {
		answered   int
		subscribes int64
	}
	asked := func(w int) mark { return mark{len(engines[w].acquiresLog()), engines[w].subscribes.Load()} }
	waits := func(w int, m mark) bool {
		return engines[w].triedAfterSubscribing(m.answered, m.subscribes)
	}
	allWait := func() bool {
		if !counted {
			return true
		}
		info, err := watch.Inspect(ctx, name)
		return err == nil && info.Waiters >= workers
	}
	marks := make([]mark, workers)
	for w := range workers {
		marks[w] = asked(w)
		c := clients[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			type result struct {
				l   *distlock.Lease
				err error
			}
			next := make(chan result, 1)
			ask := func() {
				go func() {
					l, err := c.Acquire(ctx, name, opts...)
					next <- result{l, err}
				}()
			}
			ask()
			for {
				r := <-next
				if r.err != nil {
					t.Error(r.err)
					return
				}
				mu.Lock()
				done := len(order) >= n || time.Now().After(stopAt)
				if !done {
					order = append(order, w)
				}
				mu.Unlock()
				if done {
					_ = r.l.Release(ctx)
					return
				}
				m := asked(w)
				ask()
				if !waitUntil(20*time.Second, func() bool { return waits(w, m) && allWait() }) {
					t.Error("a worker's next call did not start waiting within 20s")
				}
				_ = r.l.Release(ctx)
			}
		}()
	}
	if !waitUntil(20*time.Second, func() bool {
		for w := range workers {
			if !waits(w, marks[w]) {
				return false
			}
		}
		return allWait()
	}) {
		t.Error("the workers did not all wait within 20s")
	}
	_ = h.Release(ctx)
	wg.Wait()
	return order, engines
}

// handoffBudget bounds the time handoffOrder makes hand-offs for.
const handoffBudget = 60 * time.Second

// minHandoffs is the fewest hand-offs fairOrder judges: fewer (the budget
// ran out on a starved machine) is a skip, "machine too slow".
const minHandoffs = 100

// waitUntil polls cond (test-side only) until it holds or d passes, and
// reports whether it held.
func waitUntil(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// arrival is one Acquire call of a handoffOrder worker: when the queue
// took it in (the send and the answer of its first attempt answered
// Queued; without a queue, of its first attempt), its queue entry, and
// its place in the grant order.
type arrival struct {
	sent, answered time.Time
	waiter         string
	grant          int
	granted        time.Time     // when the winning attempt was answered
	attempts       []acquireCall // the call's attempts
	woken          []time.Time   // wake-ups its engine delivered
}

// lapsedAfterRelease reports whether the grant answered at granted came
// a reservation's length or more after the last release sent before it:
// the release reserved the lock for the queue's head, and a head that
// did not confirm in time (a wake-up delivered late, a starved process)
// loses its turn to whoever asks next. Without such a lapse the queue's
// head is the only one that can have the lock, so no grant is excused
// that came within ReserveTTL of its release.
func lapsedAfterRelease(granted time.Time, releases []time.Time) bool {
	var last time.Time
	for _, r := range releases {
		if r.Before(granted) && r.After(last) {
			last = r
		}
	}
	return !last.IsZero() && granted.Sub(last) >= engine.ReserveTTL
}

// lapsed reports whether a woken call of a was answered later than a
// reservation lasts before until: the release that woke it reserved the
// lock for it, and it confirmed (tried) only after the reservation lapsed
// (a machine too slow), so the next waiter could have the lock first.
func (a arrival) lapsed(until time.Time) bool {
	for _, w := range a.woken {
		if w.Before(a.answered) || !w.Before(until) {
			continue
		}
		next := until
		for _, x := range a.attempts {
			if !x.sent.Before(w) {
				next = x.sent
				break
			}
		}
		if next.Sub(w) >= engine.ReserveTTL {
			return true
		}
	}
	return false
}

// arrivals returns the granted calls of the workers whose grants order
// lists, from what their engines recorded. A worker has one call out at a
// time, and a call ends with the attempt that was granted.
func arrivals(order []int, engines []*counting) []arrival {
	var out []arrival
	for w, e := range engines {
		var grants []int // this worker's places in order
		for i, x := range order {
			if x == w {
				grants = append(grants, i)
			}
		}
		e.mu.Lock()
		woken := append([]time.Time(nil), e.woken...)
		e.mu.Unlock()
		var cur *arrival
		for _, a := range e.acquiresLog() {
			if a.err != nil {
				continue
			}
			if cur == nil {
				cur = &arrival{sent: a.sent, answered: a.answered, woken: woken}
			}
			cur.attempts = append(cur.attempts, a)
			if a.grant.Queued && cur.waiter == "" {
				cur.sent, cur.answered, cur.waiter = a.sent, a.answered, a.waiter
			}
			if !a.grant.Acquired {
				continue
			}
			if len(grants) > 0 {
				cur.grant, cur.granted = grants[0], a.answered
				grants = grants[1:]
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	return out
}

// releasesOf returns when every Release of the engines was sent.
func releasesOf(engines []*counting) []time.Time {
	var out []time.Time
	for _, e := range engines {
		out = append(out, e.releasesSent()...)
	}
	return out
}

// dropped returns the queue entries whose heartbeats found them gone from
// the queue (an entry that missed its heartbeat deadline, as on a starved
// machine), or failed: they entered again behind the others, or may have
// (a heartbeat that failed leaves the entry to lapse unseen, and the
// waiter's next attempt to enter again).
func dropped(engines []*counting) map[string]bool {
	out := map[string]bool{}
	for _, e := range engines {
		e.mu.Lock()
		for _, x := range e.extends {
			for i, q := range x.reqs {
				if q.Waiter && (x.err != nil || i >= len(x.res) || x.res[i].Err != nil || x.res[i].Status != engine.Extended) {
					out[q.Owner] = true
				}
			}
		}
		e.mu.Unlock()
	}
	return out
}

// outOfOrder counts the calls granted after a call that arrived after
// them: the queue confirmed the one's entry before the other's first
// attempt was sent, so its ticket is the lower one, and FIFO grants it
// first. Calls whose arrivals overlap are not ordered; entries that were
// dropped and entered again are left out, and so is a call passed over
// because it confirmed its reservation only after it lapsed (lapsed), or
// whose reservation may have lapsed unseen: a grant came a reservation's
// length or more after its release (lapsedAfterRelease) while the call
// waited, before the other's grant (the head then was dropped, and it
// may have been this call, whose wake-up came too late to be recorded).
// It returns the count and an example.
func outOfOrder(calls []arrival, skip map[string]bool, releases []time.Time) (int, string) {
	var lapses []time.Time // grants that came after a reservation may have lapsed
	for _, g := range calls {
		if lapsedAfterRelease(g.granted, releases) {
			lapses = append(lapses, g.granted)
		}
	}
	lapsedBetween := func(from, to time.Time) bool {
		return slices.ContainsFunc(lapses, func(l time.Time) bool { return l.After(from) && !l.After(to) })
	}
	bad, example := 0, ""
	for _, a := range calls {
		if skip[a.waiter] {
			continue
		}
		for _, b := range calls {
			if skip[b.waiter] || !a.answered.Before(b.sent) || a.grant < b.grant || a.lapsed(b.granted) || lapsedBetween(a.answered, b.granted) {
				continue
			}
			if bad == 0 {
				example = fmt.Sprintf("grant %d (waiter %s, %d attempts, %d wake-ups) arrived %v before grant %d's first attempt (waiter %s), yet came after it",
					a.grant, a.waiter, len(a.attempts), len(a.woken), b.sent.Sub(a.answered), b.grant, b.waiter)
			}
			bad++
			break
		}
	}
	return bad, example
}

// fairOrder: with WithFair, up to 500 hand-offs (as many as a minute
// allows, at least minHandoffs) among 8 waiters on separate
// Clients follow the queue's arrival order exactly: no waiter is granted
// after one whose entry came later. The control, the same schedule on the
// same backend with the queue hidden from the Clients (they then wait as
// on an engine without one: every release wakes every Client, and the
// first to ask wins), breaks the order.
func (s *suite) fairOrder(t *testing.T) {
	s.queuer(t, true)
	probe := StartProbe(t)
	const workers, n = 8, 500
	withQueue := func(t *testing.T, e engine.Engine) *distlock.Client {
		c := distlock.New(e)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	order, engines := s.handoffOrder(t, withQueue, true, lockName(t), workers, n, distlock.WithFair())
	if len(order) < minHandoffs {
		t.Skipf("machine too slow: %d hand-offs in %v, fewer than the %d judged", len(order), handoffBudget, minHandoffs)
	}
	calls := arrivals(order, engines)
	gone := dropped(engines)
	if bad, example := outOfOrder(calls, gone, releasesOf(engines)); bad != 0 {
		if d := probe.Delay(); d*schedFactor >= engine.ReserveTTL {
			// A head that ran this late can lose its reservation, and an
			// entry its heartbeat (kept by a server, out of this test's
			// sight, for a remote engine): the order is the machine's.
			t.Skipf("machine too slow: measured scheduling delay %v (a reservation lasts %v): fair: %d of %d grants out of arrival order; %s",
				d, engine.ReserveTTL, bad, len(calls), example)
		}
		t.Fatalf("fair: %d of %d grants out of arrival order (%d entries dropped and re-entered, left out); %s", bad, len(calls), len(gone), example)
	}
	noQueue := func(t *testing.T, e engine.Engine) *distlock.Client {
		c := distlock.New(hideQueue{e})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// (Inspect cannot count waiters outside a queue everywhere: a server
	// on Redis has one subscription for all of them.)
	const controlN = 200
	order, engines = s.handoffOrder(t, noQueue, false, lockName(t), workers, controlN)
	if len(order) < minHandoffs {
		t.Skipf("machine too slow: the control made %d hand-offs in %v, fewer than the %d judged", len(order), handoffBudget, minHandoffs)
	}
	bad, _ := outOfOrder(arrivals(order, engines), nil, nil)
	t.Logf("fair: 0 of %d out of order; without the queue: %d of %d", len(calls), bad, controlN)
	if bad == 0 {
		t.Fatalf("the control (no queue) kept arrival order over %d grants: the check cannot fail", controlN)
	}
}

// hideQueue hides an engine's waiter queue (and every other optional
// interface) from the Client.
type hideQueue struct{ engine.Engine }

// onlyHeadWoken: with 6 waiters queued on separate Clients, a release
// makes one Client send an acquire (the head's), not all of them. The
// control, with the queue hidden from the Clients, makes every one try.
func (s *suite) onlyHeadWoken(t *testing.T) {
	e, _ := s.queuer(t, false)
	probe := StartProbe(t)
	const waiters = 6
	sent := s.acquiresAfterRelease(t, waiters, false)
	if !engine.CapabilitiesOf(e).Fair {
		// A quorum's nodes each wake their own head, and the heads differ
		// when waiters entered the nodes' queues in different orders (then
		// they may split the vote and retry): no single head to count.
		t.Logf("%d acquires after a release with %d waiters (the nodes' heads)", sent, waiters)
		return
	}
	if sent > 2 {
		if d := probe.Delay(); d*schedFactor >= engine.ReserveTTL {
			// Waiters this late miss heartbeats and re-enter, and a head
			// this late loses its reservation to the others' checks.
			t.Skipf("machine too slow: measured scheduling delay %v: a release made the %d waiting Clients send %d acquires", d, waiters, sent)
		}
		t.Fatalf("a release made the %d waiting Clients send %d acquires, want the head's alone", waiters, sent)
	}
	if sent := s.acquiresAfterRelease(t, waiters, true); sent < waiters/2 {
		t.Fatalf("control without the queue: a release made %d waiting Clients send %d acquires: the check cannot fail", waiters, sent)
	}
}

// acquiresAfterRelease queues waiters on separate Clients (without the
// engine's queue if hide), releases the lock and counts the acquires the
// waiters' Clients send until one of them has it.
func (s *suite) acquiresAfterRelease(t *testing.T, waiters int, hide bool) int64 {
	name := lockName(t)
	ctx := ctxTimeout(t, 60*time.Second)
	holder := s.client(t)
	var engines []*counting
	errs := make(chan error, waiters)
	leases := make(chan *distlock.Lease, waiters)
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for range waiters {
		wrapped, e := countCalls(s.h.New(t))
		if hide {
			wrapped = hideQueue{wrapped}
		}
		engines = append(engines, e)
		c := distlock.New(wrapped)
		t.Cleanup(func() { _ = c.Close() })
		go func() {
			l, err := c.Acquire(ctx, name, distlock.WithTTL(time.Minute))
			if err != nil {
				errs <- err
				return
			}
			leases <- l
		}()
	}
	// Each waiter subscribes and tries once more after it (a release may
	// have come before the subscription) before it sleeps.
	// The bound is the test's context (a liveness bound, not a speed),
	// less the time the release's judgement needs; a waiter whose Acquire
	// failed fails the test with its error.
	var tried, counted int
	var waitErr error
	ready := func() bool {
		select {
		case err := <-errs:
			t.Fatalf("a waiter: %v", err)
		default:
		}
		tried = 0
		for _, e := range engines {
			if e.triedAfterSubscribing(0, 0) {
				tried++
			}
		}
		if tried < waiters {
			return false
		}
		if hide {
			return true // (Inspect cannot count waiters outside a queue everywhere)
		}
		info, err := holder.Inspect(ctx, name)
		counted, waitErr = info.Waiters, err
		return err == nil && info.Waiters >= waiters
	}
	if !waitUntil(45*time.Second, ready) {
		t.Fatalf("timed out after 45s waiting for the waiters: %d of %d tried after subscribing; %d counted in the queue (inspect: %v)", tried, waiters, counted, waitErr)
	}
	acquires := func() int64 {
		var n int64
		for _, e := range engines {
			n += e.acquires.Load()
		}
		return n
	}
	before := acquires()
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-leases:
		// Give the other waiters time to react to the release (a waiter
		// woken by it tries at once): until each tried, or (when they
		// need not) for three times as long as the release took to reach
		// the head, and at least 300ms.
		window := max(300*time.Millisecond, 3*time.Since(released))
		if hide {
			window = 10 * time.Second
		}
		end := time.Now().Add(window)
		for acquires()-before < int64(waiters) && time.Now().Before(end) {
			time.Sleep(time.Millisecond)
		}
		sent := acquires() - before
		_ = l.Release(ctx)
		return sent
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(time.Until(h.Deadline())):
		t.Fatal("no waiter got the lock before the holder's lease would have run out")
	}
	return 0
}

// deadWaiterSkipped: a waiter that enters the queue and dies (no
// heartbeat) heads a fair queue; once its heartbeat deadline passes, the
// live waiter behind it gets the lock.
func (s *suite) deadWaiterSkipped(t *testing.T) {
	probe := StartProbe(t)
	ctx := ctxTimeout(t, 30*time.Second)
	const deadTTL = 500 * time.Millisecond
	name, _, h := s.heldWithGhost(t, ctx, engine.AcquireRequest{Waiter: "dead-waiter", WaiterTTL: deadTTL, Order: engine.OrderFair})
	got := make(chan error, 1)
	wrapped, rec := countCalls(s.h.New(t))
	live := distlock.New(wrapped)
	t.Cleanup(func() { _ = live.Close() })
	go func() {
		l, err := live.Acquire(ctx, name, distlock.WithFair())
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	// The live waiter is queued: behind the dead one, unless the dead
	// one's entry lapsed first (its 500ms ran out on a slow machine).
	var queued acquireCall
	WaitFor(t, 20*time.Second, "the live waiter to queue", func() bool {
		for _, a := range rec.acquiresLog() {
			if a.err == nil && a.grant.Queued {
				queued = a
				return true
			}
		}
		return false
	})
	if queued.grant.Head {
		t.Skipf("machine too slow: the dead waiter's entry (%v) lapsed before the live waiter queued", deadTTL)
	}
	start := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The dead head is skipped when its reservation lapses or its
	// heartbeat deadline passes, and the next heartbeat of the live
	// waiter (every WaiterTTL/3) or its own expiry watch notices; a
	// second for the round trips between.
	bound := deadTTL + engine.ReserveTTL + distlock.WaiterTTL/3 + time.Second
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	Bounded(t, "the live waiter's grant behind a dead head", time.Since(start), bound+probe.Slack(), probe.Delay(), time.Second)
}

// giveUpLeaves: a waiter whose context ends has left the queue when its
// Acquire returns, and does not hold up a fair waiter behind it.
func (s *suite) giveUpLeaves(t *testing.T) {
	e, _ := s.queuer(t, false)
	var opts []distlock.Option
	if engine.CapabilitiesOf(e).Fair {
		opts = append(opts, distlock.WithFair())
	}
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	holder := s.client(t)
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	quit := make(chan error, 1)
	go func() {
		_, err := s.client(t).Acquire(wctx, name, opts...)
		quit <- err
	}()
	WaitFor(t, 20*time.Second, "the first waiter", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	got := make(chan error, 1)
	wrapped, rec := countCalls(s.h.New(t))
	second := distlock.New(wrapped)
	t.Cleanup(func() { _ = second.Close() })
	go func() {
		l, err := second.Acquire(ctx, name, opts...)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	seen := "" // the last reading, said if the wait times out
	defer func() {
		if t.Failed() && seen != "" {
			t.Logf("the last reading while waiting for the second waiter: %s", seen)
		}
	}()
	WaitFor(t, 20*time.Second, "the second waiter", func() bool {
		select { // a waiter that ended meanwhile is the failure, not the wait
		case err := <-quit:
			t.Fatalf("the first waiter ended before the second queued: %v", err)
		case err := <-got:
			t.Fatalf("the second waiter ended before it queued: %v", err)
		default:
		}
		info, err := holder.Inspect(ctx, name)
		seen = fmt.Sprintf("%d waiters, queue %+v, error %v", info.Waiters, info.Queue, err)
		return err == nil && info.Waiters == 2
	})
	cancel()
	if err := <-quit; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter that gave up: %v", err)
	}
	if s.h.Votes {
		// A quorum's leave is sent to every node within its per-node
		// timeout; a node that did not answer in time (starved) drops
		// the entry at its heartbeat deadline (distlock.WaiterTTL), and
		// Inspect counts the waiters a majority of the nodes count: two
		// until a majority has the leave.
		WaitFor(t, 20*time.Second, "the quorum's nodes to count one waiter", func() bool {
			info, err := holder.Inspect(ctx, name)
			return err == nil && info.Waiters == 1
		})
	}
	if info, err := holder.Inspect(ctx, name); err != nil || info.Waiters != 1 {
		t.Fatalf("after the first waiter gave up: %d waiters (%v), want 1", info.Waiters, err)
	}
	probe := StartProbe(t)
	start := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// Had the first one's entry stayed at the head, the release would
	// have gone to it, and the second waiter would have had to wait for a
	// reservation to lapse. The check tells the two apart while a
	// hand-off (a release, a wake-up, an attempt: three round trips, and
	// scheduling) takes less than a reservation.
	handoff := 3*rec.Slowest() + probe.Slack()
	Bounded(t, "the second waiter's grant after the release", time.Since(start), engine.ReserveTTL, handoff, engine.ReserveTTL)
}

// reservationLapses: a release reserves the lock for a fair head; nobody
// else can take it (TryAcquire is told waiters are queued); a head that
// never confirms is skipped when the reservation lapses, and the lock is
// free again.
func (s *suite) reservationLapses(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	name, _, h := s.heldWithGhost(t, ctx, engine.AcquireRequest{Waiter: "ghost-waiter", WaiterTTL: time.Minute, Order: engine.OrderFair})
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := s.client(t).TryAcquire(ctx, name)
	var le *distlock.LockedError
	if !errors.As(err, &le) || !le.Queued {
		if time.Since(released) < engine.ReserveTTL {
			t.Fatalf("TryAcquire of a lock reserved for the head: %v, want a LockedError with Queued", err)
		}
		t.Skipf("machine too slow: it took %v to try, the reservation (%v) lapsed already", time.Since(released), engine.ReserveTTL)
	}
	var l *distlock.Lease
	WaitFor(t, 20*time.Second, "the reservation to lapse", func() bool {
		l, err = s.client(t).TryAcquire(ctx, name)
		return err == nil
	})
	if took := time.Since(released); took < engine.ReserveTTL {
		t.Fatalf("the lock was granted %v after a release that reserved it for %v", took, engine.ReserveTTL)
	}
	_ = l.Release(ctx)
}

// ghost is an entry queued straight on an engine (heldBeforeGhosts),
// which never heartbeats: it expires after ttl.
type ghost struct {
	id  string
	ttl time.Duration
}

// heldBeforeGhosts makes a Client hold a new lock name (a minute's lease),
// then queues ghosts, in order, on one engine of the backend (fair ones
// with fair, on an engine whose queue can be fair). It returns the engine
// (a ghost leaves through it), the name, the holder and its lease.
func (s *suite) heldBeforeGhosts(t *testing.T, ctx context.Context, fair bool, ghosts ...ghost) (engine.Queuer, string, *distlock.Client, *distlock.Lease) {
	t.Helper()
	e, q := s.queuer(t, fair)
	name := lockName(t)
	holder := s.client(t)
	// An explicit owner: a quorum answers its grant once every node did
	// (a one-off owner's returns at a majority, and a straggler node could
	// then queue a ghost before the grant lands there, and make the next
	// ghost the head of its queue).
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute), distlock.WithOwner("holder-"+name))
	if err != nil {
		t.Fatal(err)
	}
	order := engine.OrderDefault
	if fair {
		order = engine.OrderFair
	}
	sent := make([]time.Time, len(ghosts))
	for i, g := range ghosts {
		sent[i] = time.Now()
		got, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: g.id, Attempt: g.id, TTL: time.Minute,
			Waiting: true, Waiter: g.id, WaiterTTL: g.ttl, Order: order})
		if err == nil && !got.Acquired && got.Queued && got.Head && i > 0 {
			skipIfGhostLapsed(t, ghosts[:i], sent[:i], g.id)
		}
		if err != nil || got.Acquired || !got.Queued || got.Head != (i == 0) {
			t.Fatalf("the entry of %s: %+v, %v", g.id, got, err)
		}
	}
	return q, name, holder, h
}

// skipIfGhostLapsed skips the test when one of the ghosts queued before
// id (each sent at its time in sent) may have expired before id queued:
// its whole ttl has passed since its request was sent, so id heading the
// queue is the queue's rule, and the machine was too slow for the case's
// setup. A ghost ahead that cannot have expired leaves id's heading the
// queue to be judged (a failure).
func skipIfGhostLapsed(t *testing.T, ahead []ghost, sent []time.Time, id string) {
	t.Helper()
	for j, g := range ahead {
		if took := time.Since(sent[j]); took >= g.ttl {
			t.Skipf("machine too slow: %s heads the queue because %s (ttl %v) may have expired, %v after it was sent", id, g.id, g.ttl, took)
		}
	}
}

// leastTTL is the shortest ttl the suite gives an engine's entries.
func (s *suite) leastTTL(t *testing.T) time.Duration {
	return max(distlock.MinTTL, engine.CapabilitiesOf(s.h.New(t)).MinTTL)
}

// reservationPassesOnLeave: when the head a release reserved the lock for
// leaves the queue, the next head gets a reservation of its own, a whole
// one from the leave, not what was left of the one before (a head that
// came to the queue's front late would be skipped before it could take
// the lock). Two fair ghost waiters queue; the release reserves the lock
// for the first (a newcomer's TryAcquire is told the reservation's time
// left, at most its length); once half of that has passed, the first
// leaves; the lock must then stay kept for the second at least that time
// left after the Leave was sent, or engine.ReserveTTL when that is
// shorter (the least reservation the contract promises: etcd reports its
// reservations' full 2 s, and keeps some for less).
func (s *suite) reservationPassesOnLeave(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	q, name, _, h := s.heldBeforeGhosts(t, ctx, true, ghost{"ghost-first", time.Minute}, ghost{"ghost-second", time.Minute})
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	newcomer := s.client(t)
	var tried time.Time
	var left time.Duration // the first head's reservation, as first told
	reserved := func() time.Duration {
		sent := time.Now()
		l, err := newcomer.TryAcquire(ctx, name)
		if err == nil {
			_ = l.Release(ctx)
			// Neither ghost takes the lock: both reservations lapse in
			// turn, the second a whole one after the first.
			if left > 0 && sent.Sub(tried) >= left+engine.ReserveTTL {
				t.Skipf("machine too slow: the newcomer tried %v after the first head's reservation (%v) was told, past it and the next head's least one (%v)", sent.Sub(tried), left, engine.ReserveTTL)
			}
			if left == 0 && sent.Sub(released) >= 2*engine.ReserveTTL {
				t.Skipf("machine too slow: the newcomer first tried %v after the release, past two heads' least reservations (%v each)", sent.Sub(released), engine.ReserveTTL)
			}
		}
		var le *distlock.LockedError
		if !errors.As(err, &le) || !le.Queued {
			t.Fatalf("TryAcquire of a lock reserved for the head: %v, want a LockedError with Queued", err)
		}
		return le.TTL
	}
	tried = time.Now()
	left = reserved()
	var answered time.Time // when the newcomer's last refusal came back
	WaitFor(t, 20*time.Second, "half the first head's reservation to pass", func() bool {
		reserved()
		answered = time.Now()
		return answered.Sub(tried) >= left/2
	})
	// A refusal answered after the first head's reservation may have
	// lapsed may have come from the newcomer's own round dropping that
	// head and passing the reservation on, before the Leave: the second
	// head's reservation would then count from that round, not the Leave.
	if late := answered.Sub(tried); late >= left {
		t.Skipf("machine too slow: the newcomer's last try was answered %v after the first head's reservation (%v) was told, when it may have lapsed and passed on before the Leave", late, left)
	}
	leave := time.Now()
	if err := q.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "ghost-first"}); err != nil {
		t.Fatal(err)
	}
	var l *distlock.Lease
	WaitFor(t, 20*time.Second, "the second head's reservation to lapse", func() bool {
		var err error
		l, err = newcomer.TryAcquire(ctx, name)
		return err == nil
	})
	defer func() { _ = l.Release(ctx) }()
	if kept, took := min(left, engine.ReserveTTL), time.Since(leave); took < kept {
		t.Fatalf("a newcomer took the lock %v after the reserved head left: the lock was not kept for the next head for %v", took, kept)
	}
}

// reservationPassesOnExpiry: when the head a release reserved the lock
// for dies (its entry expires), the fair waiter behind it is still owed
// the lock: a newcomer is refused (Queued) after the first head's
// reservation would have lapsed, instead of the second head being dropped
// with it. Two fair ghost waiters queue, the first with the engine's
// least ttl; the release reserves the lock for the first; once its entry
// has expired and its reservation's time (as a newcomer was told it) has
// passed, a newcomer's TryAcquire must be refused. The second head never
// takes the lock, so its own reservation lapses too: a newcomer that tries
// more than engine.ReserveTTL after the first entry may have gone is not
// judged ("machine too slow").
func (s *suite) reservationPassesOnExpiry(t *testing.T) {
	ctx := ctxTimeout(t, 60*time.Second)
	least := s.leastTTL(t)
	// The first entry cannot expire, nor pass the lock on, before its ttl
	// after this.
	passedFrom := time.Now().Add(least)
	_, name, holder, h := s.heldBeforeGhosts(t, ctx, true, ghost{"ghost-dying", least}, ghost{"ghost-owed", time.Minute})
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	newcomer := s.client(t)
	tried := time.Now()
	l, err := newcomer.TryAcquire(ctx, name)
	var le *distlock.LockedError
	if err == nil && tried.Sub(released) >= 2*engine.ReserveTTL {
		// Neither ghost takes the lock: both reservations may have lapsed
		// in turn before the newcomer's first try.
		_ = l.Release(ctx)
		t.Skipf("machine too slow: the newcomer first tried %v after the release, past two heads' least reservations (%v each)", tried.Sub(released), engine.ReserveTTL)
	}
	if !errors.As(err, &le) || !le.Queued {
		t.Fatalf("TryAcquire of a lock reserved for the head: %v, want a LockedError with Queued", err)
	}
	lapsed := tried.Add(le.TTL)
	WaitFor(t, 30*time.Second, "the first entry to expire and its reservation to lapse", func() bool {
		sent := time.Now()
		info, err := holder.Inspect(ctx, name)
		if err == nil && info.Waiters == 2 {
			passedFrom = sent // the first entry was still queued when this was sent
		}
		return err == nil && info.Waiters == 1 && time.Now().After(lapsed)
	})
	sent := time.Now()
	if l, err := newcomer.TryAcquire(ctx, name); err == nil {
		_ = l.Release(ctx)
		if late := sent.Sub(passedFrom); late >= engine.ReserveTTL {
			// The second head's own reservation, a whole one from when the
			// first entry went, may have lapsed too (it never takes the
			// lock): the newcomer's grant is then the queue's rule.
			t.Skipf("machine too slow: the newcomer tried %v after the first entry may have gone, longer than the least reservation (%v) the next head is owed", late, engine.ReserveTTL)
		}
		t.Fatal("a newcomer took the lock while a fair waiter was queued, after the head before it died")
	} else if !errors.As(err, &le) || !le.Queued {
		t.Fatalf("TryAcquire with a fair waiter queued: %v, want a LockedError with Queued", err)
	}
}

// leaveBehindExpired: the waiter behind an expired entry (one whose
// heartbeats stopped) leaves the queue of a lock released meanwhile: the
// Leave succeeds, the queue is then empty, and the lock free. Two ghost
// waiters queue, the first with the engine's least ttl, the second with a
// minute; once the first's entry has expired the holder releases, and the
// second leaves.
func (s *suite) leaveBehindExpired(t *testing.T) {
	ctx := ctxTimeout(t, 60*time.Second)
	q, name, holder, h := s.heldBeforeGhosts(t, ctx, false, ghost{"ghost-expiring", s.leastTTL(t)}, ghost{"ghost-leaving", time.Minute})
	WaitFor(t, 30*time.Second, "the first entry to expire", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "ghost-leaving"}); err != nil {
		t.Fatalf("Leave behind an expired entry: %v", err)
	}
	if info, err := holder.Inspect(ctx, name); err != nil || info.Waiters != 0 || info.Held {
		t.Fatalf("after the Leave: %+v, %v; want a free lock and no waiter", info, err)
	}
	s.newcomerTakes(t, ctx, name, "the free lock with an empty queue")
}

// newcomerTakes shows that a new Client's TryAcquire takes name at once
// (what says why it must: the lock free, its queue empty), and releases.
func (s *suite) newcomerTakes(t *testing.T, ctx context.Context, name, what string) {
	t.Helper()
	l, err := s.client(t).TryAcquire(ctx, name)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	_ = l.Release(ctx)
}

// leaveThroughAnotherEngine: a waiter leaves the queue through any engine
// of the backend, not only the one (the process, the session) that
// queued it, as engine.Queuer's Leave promises: a ghost queued on one
// engine leaves through another; the queue is then empty, and once the
// holder releases, a newcomer takes the lock at once (no reservation is
// kept for the waiter that left). The control: the ghost was queued and
// listed before it left.
func (s *suite) leaveThroughAnotherEngine(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	_, name, holder, h := s.heldBeforeGhosts(t, ctx, false, ghost{"ghost-leaving", time.Minute})
	if info, err := holder.Inspect(ctx, name); err != nil || info.Waiters != 1 {
		t.Fatalf("the ghost's entry, before it leaves: %+v, %v; want one waiter", info, err)
	}
	_, other := s.queuer(t, false)
	if err := other.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "ghost-leaving"}); err != nil {
		t.Fatalf("Leave through another engine: %v", err)
	}
	if info, err := holder.Inspect(ctx, name); err != nil || info.Waiters != 0 || len(info.Queue) != 0 {
		t.Fatalf("after the Leave through another engine: %+v, %v; want no waiter", info, err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s.newcomerTakes(t, ctx, name, "the free lock whose only waiter left")
}

// leftWaiterStillWaits: a live waiter whose entry another engine took out
// of the queue (leaveThroughAnotherEngine) is not lost: its Client learns
// at its next heartbeat that the entry is gone and queues again, and it
// takes the lock once the holder releases. The control: the entry was
// listed and then gone.
func (s *suite) leftWaiterStillWaits(t *testing.T) {
	ctx := ctxTimeout(t, 60*time.Second)
	q, name, holder, h := s.heldBeforeGhosts(t, ctx, false) // no ghost: q is an engine the waiter does not use
	waiter := s.client(t)
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, name, distlock.WithTTL(10*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	var id string
	WaitFor(t, 30*time.Second, "the waiter's entry", func() bool {
		info, err := holder.Inspect(ctx, name)
		if err == nil && len(info.Queue) == 1 {
			id = info.Queue[0].ID
		}
		return id != ""
	})
	if err := q.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: id}); err != nil {
		t.Fatalf("Leave of the live waiter through another engine: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter whose entry was taken out, after the release: %v; want the lock", err)
	}
}

// fairNewcomerQueues: a fair Acquire never takes a free lock ahead of the
// queue, even when the head is not fair. The head here is a dead waiter
// that is never reserved for (OrderNoReserve, as a quorum's): the release wakes
// it and leaves the lock free. A fair newcomer must then wait behind it
// (its first attempt, made before it is queued, asks to stay behind),
// while a default-policy newcomer may take the free lock at once: the
// control, which shows that only fairness kept the fair one out.
func (s *suite) fairNewcomerQueues(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	name, holder, h := s.heldWithGhost(t, ctx, engine.AcquireRequest{Waiter: "dead-head", WaiterTTL: time.Minute, Order: engine.OrderNoReserve})
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := holder.Inspect(ctx, name); err != nil || info.Held {
		t.Fatalf("after the release: %+v, %v; want free", info, err)
	}
	// The budget ends the fair call: it must still be waiting then.
	fctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if l, err := s.client(t).Acquire(fctx, name, distlock.WithFair()); err == nil {
		_ = l.Release(ctx)
		t.Fatal("a fair newcomer took the free lock ahead of the waiter queued before it")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the fair newcomer: %v, want it to wait out its budget", err)
	}
	l, err := s.client(t).TryAcquire(ctx, name)
	if err != nil {
		t.Fatalf("control: a default-policy newcomer could not take the free lock: %v", err)
	}
	_ = l.Release(ctx)
}

// queueUnsupported: on an engine without a queue that can be fair,
// WithFair is refused with an *UnsupportedError and changes nothing.
func (s *suite) queueUnsupported(t *testing.T) {
	e := s.h.New(t)
	if _, ok := e.(engine.Queuer); ok && engine.CapabilitiesOf(e).Fair {
		t.Skip("the engine's queue can be fair")
	}
	c := distlock.New(e)
	defer c.Close()
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	_, err := c.Acquire(ctx, name, distlock.WithFair())
	var ue *distlock.UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, distlock.ErrInvalidArgument) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("WithFair without a queue: %v, want an *UnsupportedError", err)
	}
	if info, err := c.Inspect(ctx, name); err != nil || info.Held {
		t.Fatalf("the refused call changed the lock: %+v, %v", info, err)
	}
}
