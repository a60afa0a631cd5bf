package main

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// opsConfig describes a cell of acquire+release operations (S1, S2, S4, S5).
type opsConfig struct {
	workers  int
	warmup   time.Duration
	duration time.Duration
	// hangLimit ends the cell as soon as one operation has been running
	// longer: the library is reported as hanging, its context is cancelled.
	hangLimit time.Duration
	// name returns the lock name of a worker.
	name func(worker int) string
	// beforeMeasure runs between the warm-up and the measured window (S5
	// pauses a node there).
	beforeMeasure func() error
	// counter, when set, counts the client's requests in the window.
	counter *peers.Counter
}

// opsResult is what one cell of operations measured.
type opsResult struct {
	lat      []time.Duration // every successful acquire+release, sorted
	ops      int64           // successful operations
	errs     int64           // failed operations
	firstErr error
	hung     bool
	hungIn   string // "warm-up" or "window"
	w        window
	// drain waits up to d for workers still inside an operation (after a
	// hang) and reports whether they all returned.
	drain func(d time.Duration) bool
	// collect gathers the workers' samples; runOps calls it unless the cell
	// hung, in which case it is safe only after drain returned true.
	collect func()
}

// worker returns the Locker that worker i uses.
func worker(lk peers.Locker, i int) peers.Locker {
	if pw, ok := lk.(peers.PerWorker); ok {
		return pw.ForWorker(i)
	}
	return lk
}

// opWorker is the state of one worker goroutine.
type opWorker struct {
	lk       peers.Locker
	name     string
	lat      []time.Duration
	ops      int64
	errs     int64
	firstErr error
	inflight atomic.Int64 // start of the running operation (UnixNano), 0 if none
}

// loop runs acquire+release on ctx until the deadline or stop, recording
// the latency of each successful operation when record is set.
func (w *opWorker) loop(ctx context.Context, until time.Time, stop *atomic.Bool, record bool) {
	for !stop.Load() {
		t0 := time.Now()
		if !t0.Before(until) {
			return
		}
		w.inflight.Store(t0.UnixNano())
		h, err := w.lk.Acquire(ctx, w.name)
		if err == nil {
			err = h.Release(context.WithoutCancel(ctx))
		}
		d := time.Since(t0)
		w.inflight.Store(0)
		if !record || stop.Load() {
			continue
		}
		if err != nil {
			w.errs++
			if w.firstErr == nil {
				w.firstErr = err
			}
			continue
		}
		w.ops++
		w.lat = append(w.lat, d)
	}
}

// phase runs every worker's loop until the deadline and waits for them,
// unless an operation runs past the hang limit: then it stops the workers,
// cancels their context and returns at once with hung set, and done is
// closed when the workers have all returned.
func phase(ctx context.Context, ws []*opWorker, until time.Time, record bool, hangLimit time.Duration) (hung bool, done chan struct{}) {
	var stop atomic.Bool
	pctx, cancel := context.WithCancel(ctx)
	done = make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { w.loop(pctx, until, &stop, record) })
	}
	go func() { wg.Wait(); cancel(); close(done) }()
	if hangLimit <= 0 {
		<-done
		return false, done
	}
	tick := time.NewTicker(max(hangLimit/20, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-done:
			return false, done
		case now := <-tick.C:
			for _, w := range ws {
				if s := w.inflight.Load(); s != 0 && now.UnixNano()-s > int64(hangLimit) {
					stop.Store(true)
					cancel() // libraries that honour the context return now
					return true, done
				}
			}
		}
	}
}

// runOps warms lk up, then measures workers doing acquire+release for
// cfg.duration.
func runOps(ctx context.Context, lk peers.Locker, nodes []*node, cfg opsConfig) *opsResult {
	ws := make([]*opWorker, cfg.workers)
	for i := range ws {
		ws[i] = &opWorker{lk: worker(lk, i), name: cfg.name(i)}
	}
	res := &opsResult{}
	waitFor := func(done chan struct{}) func(time.Duration) bool {
		return func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-done:
				return true
			case <-t.C:
				return false
			}
		}
	}
	res.collect = func() {
		for _, w := range ws {
			res.lat = append(res.lat, w.lat...)
			res.ops += w.ops
			res.errs += w.errs
			res.firstErr = cmp(res.firstErr, w.firstErr)
		}
		slices.Sort(res.lat)
	}

	// Warm-up: the same loop, not recorded.
	if cfg.warmup > 0 {
		hung, done := phase(ctx, ws, time.Now().Add(cfg.warmup), false, cfg.hangLimit)
		if hung {
			res.hung, res.hungIn, res.drain = true, "warm-up", waitFor(done)
			return res
		}
	}
	if cfg.beforeMeasure != nil {
		if err := cfg.beforeMeasure(); err != nil {
			res.firstErr = err
			res.drain = func(time.Duration) bool { return true }
			return res
		}
	}
	// Room for the expected samples, so appends rarely allocate.
	for _, w := range ws {
		w.lat = make([]time.Duration, 0, 1<<16/cfg.workers+1024)
	}
	runtime.GC()

	p := beginProbe(ctx, nodes, cfg.counter)
	hung, done := phase(ctx, ws, time.Now().Add(cfg.duration), true, cfg.hangLimit)
	res.w = p.end(ctx)
	res.hung, res.hungIn, res.drain = hung, "window", waitFor(done)
	if !hung {
		res.collect()
	}
	return res
}

// cmp returns a if it is not nil, else b.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
