package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// contendConfig describes a cell of S3: workers contending for one name,
// each holding it for hold, then asking again at once.
type contendConfig struct {
	workers  int
	name     string
	hold     time.Duration
	warmup   time.Duration
	duration time.Duration
	counter  *peers.Counter
}

// contendResult is what one contention cell measured, over the grants
// whose Acquire returned inside the measured window.
type contendResult struct {
	grants    int
	waits     []time.Duration // from the start of the granted Acquire call (or of the window) to the grant, sorted
	wantWaits []time.Duration // from wanting the lock to holding it, across give-ups, sorted
	gaps      []time.Duration // from the previous holder's release call to the grant, sorted
	perWorker []int
	same      int           // grants to the worker that held the lock just before
	giveUps   int64         // Acquire calls that returned an error other than the end of the cell
	overlaps  int64         // grants while the harness saw another holder (must be 0)
	held      time.Duration // total time holders slept while holding, in the window
	censored  int           // waits still going on at the end of the window
	firstErr  error
	w         window
}

// contention is the harness's view of who holds the lock.
type contention struct {
	mu          sync.Mutex
	holder      int // -1 when free
	last        int // the worker granted last, -1 at first
	lastRelease time.Time
	from, until time.Time // the measured window
	res         *contendResult
	// calling[i] is when worker i's Acquire call started, wanting[i] when
	// it started wanting the lock (UnixNano; earlier after a give-up), both
	// 0 while it holds it: at the end of the window, waits still going on
	// count as samples too (lower bounds), or a starved goroutine would
	// never show in the wait figures; waits that began before the window
	// count from its start (lower bounds too).
	calling, wanting []atomic.Int64
}

// granted records a grant to worker w by an Acquire call made at call; the
// worker wanted the lock since want (earlier when calls gave up).
func (c *contention) granted(w int, call, want, got time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holder >= 0 {
		c.res.overlaps++
	}
	c.holder = w
	c.calling[w].Store(0)
	c.wanting[w].Store(0)
	if !got.Before(c.from) && got.Before(c.until) {
		c.res.grants++
		c.res.perWorker[w]++
		// A wait that began before the window counts from the window's
		// start (a lower bound, as the waits still going on at its end):
		// the warm-up's first calls also open the Clients' connections.
		c.res.waits = append(c.res.waits, got.Sub(later(call, c.from)))
		c.res.wantWaits = append(c.res.wantWaits, got.Sub(later(want, c.from)))
		if !c.lastRelease.IsZero() {
			c.res.gaps = append(c.res.gaps, got.Sub(c.lastRelease))
		}
		if c.last == w {
			c.res.same++
		}
	}
	c.last = w
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// releasing records that the holder granted at got is about to release.
func (c *contention) releasing(got time.Time) {
	c.mu.Lock()
	c.holder = -1
	c.lastRelease = time.Now()
	if !got.Before(c.from) && got.Before(c.until) {
		c.res.held += c.lastRelease.Sub(got)
	}
	c.mu.Unlock()
}

// runContend runs cfg.workers goroutines that acquire cfg.name, hold it for
// cfg.hold, release it and ask again at once, for warm-up plus duration; it
// measures the window after the warm-up.
func runContend(ctx context.Context, lk peers.Locker, nodes []*node, cfg contendConfig) contendResult {
	res := contendResult{perWorker: make([]int, cfg.workers)}
	start := time.Now()
	c := &contention{holder: -1, last: -1, res: &res,
		from: start.Add(cfg.warmup), until: start.Add(cfg.warmup + cfg.duration),
		calling: make([]atomic.Int64, cfg.workers), wanting: make([]atomic.Int64, cfg.workers)}
	calling, wanting := c.calling, c.wanting
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var giveUps atomic.Int64
	var errMu sync.Mutex
	var wg sync.WaitGroup
	for i := range cfg.workers {
		l := worker(lk, i)
		wg.Go(func() {
			for ctx.Err() == nil {
				want := time.Now()
				wanting[i].Store(want.UnixNano())
				var h peers.Held
				var call time.Time
				for {
					var err error
					call = time.Now()
					calling[i].Store(call.UnixNano())
					h, err = l.Acquire(ctx, cfg.name)
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						return
					}
					if now := time.Now(); now.After(c.from) && now.Before(c.until) {
						giveUps.Add(1)
					}
					errMu.Lock()
					res.firstErr = cmp(res.firstErr, err)
					errMu.Unlock()
				}
				got := time.Now()
				c.granted(i, call, want, got)
				time.Sleep(cfg.hold)
				c.releasing(got)
				if err := h.Release(context.WithoutCancel(ctx)); err != nil {
					errMu.Lock()
					res.firstErr = cmp(res.firstErr, err)
					errMu.Unlock()
				}
			}
		})
	}

	time.Sleep(time.Until(c.from))
	p := beginProbe(ctx, nodes, cfg.counter)
	time.Sleep(time.Until(c.until))
	c.mu.Lock() // the window's samples are complete once until has passed
	res.w = p.end(ctx)
	for i := range calling {
		if w := calling[i].Load(); w != 0 && w < c.until.UnixNano() {
			res.waits = append(res.waits, c.until.Sub(time.Unix(0, w)))
			res.censored++
		}
		if w := wanting[i].Load(); w != 0 && w < c.until.UnixNano() {
			res.wantWaits = append(res.wantWaits, c.until.Sub(time.Unix(0, w)))
		}
	}
	c.mu.Unlock()
	cancel()
	wg.Wait()
	res.giveUps = giveUps.Load()
	slices.Sort(res.waits)
	slices.Sort(res.wantWaits)
	slices.Sort(res.gaps)
	return res
}
