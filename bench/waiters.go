package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// waitersConfig describes a cell of S7: many goroutines of many clients
// wait for one name that a holder keeps, then the lock is handed over from
// one to the next.
type waitersConfig struct {
	clients   int // library instances, each with its own Redis client
	perClient int // waiting goroutines per instance
	name      string
	window    time.Duration // measured while nobody releases
	handoffs  int           // measured hand-offs after the window
	// settleLimit bounds the wait for every waiter to be waiting;
	// grantLimit bounds one hand-off (a release that wakes nobody ends the
	// cell).
	settleLimit, grantLimit time.Duration
	counter                 *peers.Counter // the waiters' clients (not the holder's)
}

// settleQuiet: the waiters count as settled once every one of them called
// Acquire, the backend sees at least one waiter per instance (when the
// Locker can tell), and then neither their clients' requests nor the
// backend's count of waiters moved for this long.
const settleQuiet = 100 * time.Millisecond

// handoffQuiet: before each measured release, the harness waits until the
// waiters' clients sent nothing for this long (at most handoffQuietMax), so
// that every hand-off starts from waiters that all sleep, like the first.
const (
	handoffQuiet    = 5 * time.Millisecond
	handoffQuietMax = 200 * time.Millisecond
)

// waitersResult is what one S7 cell measured.
type waitersResult struct {
	waiters     int
	subscribers int           // the Locker's Waiters (Inspect) when settled; -1 when it cannot tell
	settle      time.Duration // from starting the waiters to settled
	// Deltas from before the waiters started to when they all wait (both
	// after a GC): the whole process, and the server.
	heapInuse, heapAlloc, stackInuse int64
	goroutines                       int
	redisMem, redisClients           int64
	quiet                            window // nobody releases
	earlyGrants                      int    // grants while nobody released (must be 0)
	handoffs                         []time.Duration
	releases                         []time.Duration // the Release calls of the hand-offs
	ho                               window          // the hand-off phase, quiet waits included
	errs                             int             // Acquire calls that failed before the end of the cell
	firstErr                         error
}

// grantEv is a waiter's grant, as the harness saw it.
type grantEv struct {
	h   peers.Held
	got time.Time
}

// runWaiters lets holder take cfg.name, starts cfg.clients × cfg.perClient
// goroutines that wait for it on waiters (worker i on instance i mod
// cfg.clients), measures memory once they all wait, then a window in which
// nobody releases, then cfg.handoffs hand-offs: the current holder releases
// and the time until some waiter is granted is measured; that waiter's
// lease is the next one released. At the end every waiter still waiting is
// cancelled and every lease released; the caller closes the Lockers.
func runWaiters(ctx context.Context, holder, waiters peers.Locker, nodes []*node, cfg waitersConfig) (res waitersResult) {
	n := cfg.clients * cfg.perClient
	res = waitersResult{waiters: n, subscribers: -1}
	// Errors come from the waiters' goroutines too: they are kept apart
	// under mu, and copied into res last, once every goroutine returned.
	var mu sync.Mutex
	var errs int
	var firstErr error
	setErr := func(err error) { // a failed call, counted
		mu.Lock()
		errs++
		firstErr = cmp(firstErr, err)
		mu.Unlock()
	}
	fail := func(err error) { // why the cell ended early: reported first
		mu.Lock()
		firstErr = cmp(err, firstErr)
		mu.Unlock()
	}
	defer func() { // runs last
		mu.Lock()
		res.errs, res.firstErr = errs, firstErr
		mu.Unlock()
	}()
	srv := nodes[0]

	// Warm-up: every waiters' instance acquires and releases a name of its
	// own, so that its command connection and scripts exist before the
	// baseline (the holder's are made by its taking the name).
	var warm sync.WaitGroup
	for i := range cfg.clients {
		warm.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, cfg.settleLimit)
			defer cancel()
			h, err := worker(waiters, i).Acquire(wctx, fmt.Sprintf("%s-warm%d", cfg.name, i))
			if err == nil {
				err = h.Release(ctx)
			}
			if err != nil {
				setErr(fmt.Errorf("warm-up: %w", err))
			}
		})
	}
	warm.Wait()
	hctx, hcancel := context.WithTimeout(ctx, cfg.settleLimit)
	cur, err := holder.Acquire(hctx, cfg.name)
	hcancel()
	if err != nil {
		fail(fmt.Errorf("holder: %w", err))
		return res
	}
	defer func() {
		if cur != nil {
			_ = cur.Release(context.WithoutCancel(ctx))
		}
	}()

	grants := make(chan grantEv, n)
	var nEntered atomic.Int64
	// Let the warm-up's background work end: the goroutine count steady
	// for 100 ms (at most 2 s).
	for prev, steady, end := -1, 0, time.Now().Add(2*time.Second); steady < 2 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		if g := runtime.NumGoroutine(); g == prev {
			steady++
		} else {
			prev, steady = g, 0
		}
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	mem0, cl0, memErr := srv.memory(ctx)

	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		// Cancel the waiters still waiting, wait for them, and release
		// whatever was granted meanwhile.
		wcancel()
		if !waitGroup(&wg, drainLimit) {
			setErr(fmt.Errorf("waiters still in Acquire %v after their context was cancelled", drainLimit))
		}
		for {
			select {
			case g := <-grants:
				_ = g.h.Release(context.WithoutCancel(ctx))
				continue
			default:
			}
			break
		}
	}()
	t0 := time.Now()
	for i := range n {
		l := worker(waiters, i)
		wg.Go(func() {
			nEntered.Add(1)
			h, err := l.Acquire(wctx, cfg.name)
			if err != nil {
				if wctx.Err() == nil {
					setErr(err)
				}
				return
			}
			grants <- grantEv{h: h, got: time.Now()}
		})
	}

	// Settle: every waiter called Acquire, the backend sees at least one
	// waiter per instance (when the Locker can tell), and then neither the
	// waiters' requests nor that count moved for settleQuiet.
	insp, _ := holder.(peers.Inspector)
	deadline := t0.Add(cfg.settleLimit)
	settled := false
	lastReq, lastW, since := int64(-1), -1, time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		now := time.Now()
		if nEntered.Load() < int64(n) {
			since = now
			continue
		}
		w := cfg.clients
		if insp != nil {
			var err error
			if w, err = insp.Waiters(ctx, cfg.name); err != nil {
				fail(fmt.Errorf("inspect: %w", err))
				break
			}
			res.subscribers = w
		}
		req := int64(0)
		if cfg.counter != nil {
			req = cfg.counter.Requests()
		}
		if req != lastReq || w != lastW || w < cfg.clients {
			lastReq, lastW, since = req, w, now
			continue
		}
		if now.Sub(since) >= settleQuiet {
			settled = true
			break
		}
	}
	res.settle = time.Since(t0)
	if !settled {
		fail(fmt.Errorf("waiters not settled after %v: %d of %d called Acquire, %d subscribed",
			cfg.settleLimit, nEntered.Load(), n, res.subscribers))
		return res
	}

	runtime.GC()
	runtime.ReadMemStats(&m1)
	res.heapInuse = int64(m1.HeapInuse) - int64(m0.HeapInuse)
	res.heapAlloc = int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	res.stackInuse = int64(m1.StackInuse) - int64(m0.StackInuse)
	res.goroutines = runtime.NumGoroutine() - g0
	if memErr == nil {
		mem1, cl1, err := srv.memory(ctx)
		if err == nil {
			res.redisMem, res.redisClients = mem1-mem0, cl1-cl0
		} else {
			memErr = err
		}
	}
	if memErr != nil {
		setErr(fmt.Errorf("redis memory: %w", memErr))
		res.redisMem = -1
	}

	// The window: the holder keeps the lock, the waiters only wait.
	p := beginProbe(ctx, nodes, cfg.counter)
	time.Sleep(cfg.window)
	res.quiet = p.end(ctx)
	res.earlyGrants = len(grants)

	// The hand-offs.
	p = beginProbe(ctx, nodes, cfg.counter)
	for i := range cfg.handoffs {
		quiesce(cfg.counter, handoffQuiet, handoffQuietMax)
		start := time.Now()
		if err := cur.Release(context.WithoutCancel(ctx)); err != nil {
			setErr(fmt.Errorf("release %d: %w", i+1, err))
		}
		res.releases = append(res.releases, time.Since(start))
		cur = nil
		select {
		case g := <-grants:
			res.handoffs = append(res.handoffs, g.got.Sub(start))
			cur = g.h
			continue
		case <-time.After(cfg.grantLimit):
			fail(fmt.Errorf("hand-off %d: no waiter granted within %v of the release", i+1, cfg.grantLimit))
		case <-ctx.Done():
		}
		break
	}
	res.ho = p.end(ctx)
	slices.Sort(res.handoffs)
	slices.Sort(res.releases)
	return res
}

// quiesce waits until c's request count has not moved for quiet, at most
// limit, and reports whether it got there.
func quiesce(c *peers.Counter, quiet, limit time.Duration) bool {
	if c == nil {
		time.Sleep(quiet)
		return true
	}
	step := max(quiet/5, time.Millisecond)
	end := time.Now().Add(limit)
	last, since := c.Requests(), time.Now()
	for {
		time.Sleep(step)
		now := time.Now()
		if r := c.Requests(); r != last {
			last, since = r, now
		} else if now.Sub(since) >= quiet {
			return true
		}
		if now.After(end) {
			return false
		}
	}
}
