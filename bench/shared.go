package main

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// sharedConfig describes a cell of S9 or S10: workers taking a shared lock
// (a semaphore's permits, or an RW lock's read and write locks), each
// holding it for hold, then asking again at once.
type sharedConfig struct {
	workers  int
	limit    int     // the semaphore's limit; 0 for an RW lock
	writes   float64 // RW lock: the fraction of acquisitions that are writes
	name     string
	hold     time.Duration
	warmup   time.Duration
	duration time.Duration
	counter  *peers.Counter
}

// sharedResult is what one shared-lock cell measured, over the grants made
// inside the window.
type sharedResult struct {
	reads, writes         int             // grants (a semaphore's are all "reads")
	readWaits, writeWaits []time.Duration // from the Acquire call to the grant, sorted; waits going on at the end included
	perWorker             []int
	readHoldMax           time.Duration // the longest hold of a read lock (a permit), release call included
	writeSpans            []writeSpan   // every write lock taken, in the window or not (writeBeyond)
	held                  time.Duration // total hold time (sleep) of the window's grants
	maxHolders            int           // the most holders at once the harness saw
	violations            int64         // grants beyond the limit, or a writer with anyone
	giveUps               int64
	firstErr              error
	w                     window
}

// runShared runs cfg.workers goroutines taking the shared lock cfg.name.
func runShared(ctx context.Context, lk peers.Locker, nodes []*node, cfg sharedConfig) sharedResult {
	res := sharedResult{perWorker: make([]int, cfg.workers)}
	start := time.Now()
	from, until := start.Add(cfg.warmup), start.Add(cfg.warmup+cfg.duration)
	var mu sync.Mutex
	holders, writers := 0, 0
	calling := make([]atomic.Int64, cfg.workers)
	writing := make([]atomic.Bool, cfg.workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inWindow := func(t time.Time) bool { return !t.Before(from) && t.Before(until) }
	setErr := func(err error) {
		mu.Lock()
		res.firstErr = cmp(res.firstErr, err)
		mu.Unlock()
	}
	var giveUps atomic.Int64
	var wg sync.WaitGroup
	for i := range cfg.workers {
		l := worker(lk, i)
		rd, _ := l.(peers.Reader)
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		wg.Go(func() {
			for ctx.Err() == nil {
				write := cfg.limit == 0 && (rd == nil || rng.Float64() < cfg.writes)
				writing[i].Store(write)
				var h peers.Held
				var call time.Time
				for {
					var err error
					call = time.Now()
					calling[i].Store(call.UnixNano())
					if write || cfg.limit > 0 {
						h, err = l.Acquire(ctx, cfg.name)
					} else {
						h, err = rd.RLock(ctx, cfg.name)
					}
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						return
					}
					if inWindow(time.Now()) {
						giveUps.Add(1)
					}
					setErr(err)
				}
				got := time.Now()
				mu.Lock()
				calling[i].Store(0)
				if (write && holders > 0) || writers > 0 || (cfg.limit > 0 && holders >= cfg.limit) {
					res.violations++
				}
				holders++
				if write {
					writers++
				}
				if inWindow(got) {
					res.maxHolders = max(res.maxHolders, holders)
					res.perWorker[i]++
					if write {
						res.writes++
						res.writeWaits = append(res.writeWaits, got.Sub(call))
					} else {
						res.reads++
						res.readWaits = append(res.readWaits, got.Sub(call))
					}
				}
				mu.Unlock()
				time.Sleep(cfg.hold)
				mu.Lock()
				holders--
				if write {
					writers--
				}
				if inWindow(got) {
					res.held += time.Since(got)
				}
				if write {
					res.writeSpans = append(res.writeSpans, writeSpan{call: call, got: got, end: time.Now(), in: inWindow(got)})
				}
				mu.Unlock()
				err := h.Release(context.WithoutCancel(ctx))
				if d := time.Since(got); !write && inWindow(got) {
					mu.Lock()
					res.readHoldMax = max(res.readHoldMax, d)
					mu.Unlock()
				}
				if err != nil {
					setErr(err)
				}
			}
		})
	}
	time.Sleep(time.Until(from))
	p := beginProbe(ctx, nodes, cfg.counter)
	time.Sleep(time.Until(until))
	mu.Lock()
	res.w = p.end(ctx)
	for i := range calling {
		if c := calling[i].Load(); c != 0 && c < until.UnixNano() {
			d := until.Sub(time.Unix(0, c))
			if writing[i].Load() {
				res.writeWaits = append(res.writeWaits, d)
			} else {
				res.readWaits = append(res.readWaits, d)
			}
		}
	}
	mu.Unlock()
	cancel()
	wg.Wait()
	res.giveUps = giveUps.Load()
	slices.Sort(res.readWaits)
	slices.Sort(res.writeWaits)
	return res
}

// fillShared turns a sharedResult into a record's figures.
func fillShared(rec *record, res sharedResult) {
	m := rec.Metrics
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	rec.Commands = res.w.srvCalls
	g := float64(res.reads + res.writes)
	m["grants"] = g
	m["giveups"] = float64(res.giveUps)
	m["violations"] = float64(res.violations)
	m["max_holders"] = float64(res.maxHolders)
	if g == 0 {
		return
	}
	s := res.w.elapsed.Seconds()
	m["acq_per_s"] = g / s
	m["reads_per_s"] = float64(res.reads) / s
	m["writes_per_s"] = float64(res.writes) / s
	all := slices.Sorted(slices.Values(append(slices.Clone(res.readWaits), res.writeWaits...)))
	m["wait_p50_ms"] = ms(percentile(all, 50))
	m["wait_p99_ms"] = ms(percentile(all, 99))
	m["wait_max_ms"] = ms(percentile(all, 100))
	if len(res.readWaits) > 0 {
		m["read_wait_p50_ms"] = ms(percentile(res.readWaits, 50))
		m["read_wait_p99_ms"] = ms(percentile(res.readWaits, 99))
	}
	if len(res.writeWaits) > 0 {
		m["write_wait_p50_ms"] = ms(percentile(res.writeWaits, 50))
		m["write_wait_p99_ms"] = ms(percentile(res.writeWaits, 99))
		m["write_wait_max_ms"] = ms(percentile(res.writeWaits, 100))
	}
	m["read_hold_max_ms"] = ms(res.readHoldMax)
	if beyond, ahead := writeBeyond(res.writeSpans); ahead >= 0 {
		m["write_wait_beyond_max_ms"] = ms(beyond)
		m["writers_ahead"] = float64(ahead)
	}
	m["hold_ms"] = ms(res.held) / g
	m["jain"] = jain(res.perWorker)
	m["min_per_g"] = float64(slices.Min(res.perWorker))
	m["max_per_g"] = float64(slices.Max(res.perWorker))
	m["req_per_acq"] = float64(res.w.requests) / g
	m["srv_cmds_per_acq"] = float64(res.w.srvCmds) / g
	m["srv_pubsub_per_acq"] = float64(pubsubCmds(res.w.srvCalls)) / g
	m["srv_cpu_us_per_acq"] = float64(res.w.srvCPU) / float64(time.Microsecond) / g
}

// writeSpan is one write lock: its Acquire call, the grant, and the start
// of its release (the end of the hold the harness slept).
type writeSpan struct {
	call, got, end time.Time
	in             bool // granted inside the window
}

// writeBeyond counts the writers as the queue they form (the S10 target):
// for each write granted in the window, its wait less the time other
// writers held the lock during it. It returns the longest such wait and the
// number of writers whose holds were taken out of that wait (each of them
// costs one hand-off more), or -1 when no write was granted in the window.
func writeBeyond(spans []writeSpan) (time.Duration, int) {
	var longest time.Duration
	ahead := -1
	for i, w := range spans {
		if !w.in {
			continue
		}
		wait, n := w.got.Sub(w.call), 0
		for j, x := range spans {
			if j == i {
				continue
			}
			from, to := x.got, x.end
			if w.call.After(from) {
				from = w.call
			}
			if w.got.Before(to) {
				to = w.got
			}
			if o := to.Sub(from); o > 0 {
				wait -= o
				n++
			}
		}
		if ahead < 0 || wait > longest {
			longest, ahead = wait, n
		}
	}
	return longest, ahead
}
