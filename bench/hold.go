package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// holdConfig describes a cell of S6: one client holds many auto-renewed
// leases and does nothing else.
type holdConfig struct {
	leases   int
	acquirer int // goroutines that acquire and release the leases
	window   time.Duration
	prefix   string
	counter  *peers.Counter
	// held, when set, runs once every lease is held, before the window;
	// windowEnd right after the window.
	held, windowEnd func()
}

// holdResult is what one S6 cell measured.
type holdResult struct {
	want          int           // leases asked for
	held          int           // leases granted
	stalled       int           // acquisitions of free names still waiting after acquireLimit
	acquire       time.Duration // time to acquire every lease
	release       time.Duration // time to release every lease
	heapPerLease  float64       // live heap bytes per held lease
	gorosPerLease float64       // goroutines per held lease
	lost          int           // leases that reported a loss during the window
	firstErr      error
	w             window // the window in which the leases were only held
}

// acquireLimit bounds the acquisition of every S6 lease: the names are
// free, so only a library that lost track of a wake-up takes that long.
const acquireLimit = 30 * time.Second

// runHold acquires cfg.leases names, lets them be renewed for cfg.window
// while measuring, then releases them.
func runHold(ctx context.Context, lk peers.Locker, nodes []*node, cfg holdConfig) holdResult {
	res := holdResult{want: cfg.leases}
	// The leases live on hctx: rueidislock ties a lock's life to the context
	// it was acquired with, so hctx ends only with the cell.
	hctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex // helds, res.firstErr
	helds := make([]peers.Held, cfg.leases)
	setErr := func(err error) {
		mu.Lock()
		res.firstErr = cmp(res.firstErr, err)
		mu.Unlock()
	}

	// A round of leases from every acquirer first, so that connections,
	// buffers and background goroutines that exist for any number of leases
	// are not counted per lease.
	var warm sync.WaitGroup
	for g := range cfg.acquirer {
		warm.Go(func() {
			wctx, wcancel := context.WithTimeout(ctx, acquireLimit)
			defer wcancel()
			if h, err := lk.Acquire(wctx, fmt.Sprintf("%swarm%d", cfg.prefix, g)); err == nil {
				_ = h.Release(ctx)
			}
		})
	}
	warm.Wait()
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()

	// Acquire from cfg.acquirer goroutines. A goroutine stuck in Acquire
	// after acquireLimit is left behind (and counted as stalled); it returns
	// when hctx ends.
	var next, inflight atomic.Int64
	var acquirers sync.WaitGroup
	t0 := time.Now()
	for range cfg.acquirer {
		acquirers.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.leases {
					return
				}
				inflight.Add(1)
				h, err := lk.Acquire(hctx, fmt.Sprintf("%s%d", cfg.prefix, i))
				inflight.Add(-1)
				if err != nil {
					setErr(err)
					continue
				}
				mu.Lock()
				helds[i] = h
				mu.Unlock()
			}
		})
	}
	defer func() {
		cancel()
		waitGroup(&acquirers, 10*time.Second)
	}()
	if !waitGroup(&acquirers, acquireLimit) {
		res.stalled = int(inflight.Load())
	}
	res.acquire = time.Since(t0)
	mu.Lock()
	mine := append([]peers.Held(nil), helds...)
	mu.Unlock()
	for _, h := range mine {
		if h != nil {
			res.held++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()
	if res.held > 0 {
		res.heapPerLease = (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(res.held)
		res.gorosPerLease = float64(g1-g0-res.stalled) / float64(res.held)
	}

	if cfg.held != nil {
		cfg.held()
	}
	p := beginProbe(ctx, nodes, cfg.counter)
	time.Sleep(cfg.window)
	res.w = p.end(ctx)
	if cfg.windowEnd != nil {
		cfg.windowEnd()
	}

	for _, h := range mine {
		if e, ok := h.(interface{ Err() error }); ok && e.Err() != nil {
			res.lost++
		}
	}
	t1 := time.Now()
	var idx atomic.Int64
	var releasers sync.WaitGroup
	for range cfg.acquirer {
		releasers.Go(func() {
			for {
				i := int(idx.Add(1) - 1)
				if i >= len(mine) {
					return
				}
				if mine[i] != nil {
					if err := mine[i].Release(ctx); err != nil {
						setErr(err)
					}
				}
			}
		})
	}
	releasers.Wait()
	res.release = time.Since(t1)
	return res
}

// waitGroup waits up to d for wg and reports whether it finished.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
