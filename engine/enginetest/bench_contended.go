package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// BenchContended measures S3's cycle on one backend: n Clients, each on an
// engine of its own (as n processes), contend for one name, each holding
// it for hold and asking again at once, until b.N grants. It reports the
// grants per second and the wait's median and 99th percentile (ms), and
// splits the cycle from one grant to the next: the holder's own time from
// its grant's return to its release call (held-ms: the hold and the
// scheduling of its goroutine), the release call (release-ms), the time from a release's start to the next grant's
// return (handoff-ms: the release, the wake-up's delivery and the head's
// granting call), and the granting call alone (grant-call-ms), all
// medians; calls/grant counts every engine call (acquires, releases,
// heartbeats and renewals, leaves) per grant.
func BenchContended(b *testing.B, n int, hold time.Duration, newEngine func(b *testing.B) engine.Engine) {
	rec := &cycleLog{}
	clients := make([]*distlock.Client, n)
	for i := range clients {
		clients[i] = benchClient(b, rec.wrap(newEngine(b)))
	}
	name := fmt.Sprintf("bench-contended-%x", rand.Uint64())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var grants atomic.Int64
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for grants.Add(1) <= int64(b.N) {
				asked := time.Now()
				l, err := c.Acquire(ctx, name, distlock.WithTTL(time.Minute))
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				waits = append(waits, time.Since(asked))
				mu.Unlock()
				time.Sleep(hold)
				if err := l.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(len(waits))/elapsed.Seconds(), "grants/s")
	reportMs(b, waits, 0.5, "wait-p50-ms")
	reportMs(b, waits, 0.99, "wait-p99-ms")
	rec.report(b, len(waits))
}

// cycleLog records the calls of the engines it wraps: their count, and the
// times of grants and releases.
type cycleLog struct {
	mu       sync.Mutex
	calls    int
	grants   []span // granting acquire calls
	releases []span
}

type span struct{ start, end time.Time }

func (r *cycleLog) wrap(e engine.Engine) engine.Engine {
	t := &timed{Engine: e, r: r}
	if q, ok := e.(engine.Queuer); ok {
		return timedQueuer{t, q}
	}
	return t
}

func (r *cycleLog) add(grant, release bool, s span) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	switch {
	case grant:
		r.grants = append(r.grants, s)
	case release:
		r.releases = append(r.releases, s)
	}
}

// report reports the cycle's parts; a release is matched with the first
// grant that returned after it started, and the last before (the lock is
// held by one at a time).
func (r *cycleLog) report(b *testing.B, grants int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byEnd := func(a, b span) int { return a.end.Compare(b.end) }
	slices.SortFunc(r.grants, byEnd)
	slices.SortFunc(r.releases, byEnd)
	var rel, hand, call, held []time.Duration
	for _, g := range r.grants {
		call = append(call, g.end.Sub(g.start))
	}
	for _, s := range r.releases {
		rel = append(rel, s.end.Sub(s.start))
		i, _ := slices.BinarySearchFunc(r.grants, s.start, func(g span, t time.Time) int { return g.end.Compare(t) })
		if i < len(r.grants) {
			hand = append(hand, r.grants[i].end.Sub(s.start))
		}
		if i > 0 {
			held = append(held, s.start.Sub(r.grants[i-1].end))
		}
	}
	reportMs(b, held, 0.5, "held-ms")
	reportMs(b, rel, 0.5, "release-ms")
	reportMs(b, hand, 0.5, "handoff-ms")
	reportMs(b, call, 0.5, "grant-call-ms")
	if grants > 0 {
		b.ReportMetric(float64(r.calls)/float64(grants), "calls/grant")
	}
}

// reportMs reports the q quantile of ds in milliseconds.
func reportMs(b *testing.B, ds []time.Duration, q float64, unit string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[int(q*float64(len(ds)-1))].Microseconds())/1000, unit)
}

// timed is an engine whose calls cycleLog records.
type timed struct {
	engine.Engine
	r *cycleLog
}

func (t *timed) Acquire(ctx context.Context, req engine.AcquireRequest) (engine.Grant, error) {
	start := time.Now()
	g, err := t.Engine.Acquire(ctx, req)
	t.r.add(err == nil && g.Acquired, false, span{start, time.Now()})
	return g, err
}

func (t *timed) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	start := time.Now()
	res, err := t.Engine.Release(ctx, r)
	t.r.add(false, true, span{start, time.Now()})
	return res, err
}

func (t *timed) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	t.r.add(false, false, span{})
	return t.Engine.Extend(ctx, rs)
}

// Capabilities forwards the timed engine's (see engine.Describer).
func (t *timed) Capabilities() engine.Capabilities { return engine.CapabilitiesOf(t.Engine) }

// timedQueuer is timed for an engine with a waiter queue.
type timedQueuer struct {
	*timed
	q engine.Queuer
}

func (t timedQueuer) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return t.q.SubscribeWaiter(ctx, name, waiter)
}

func (t timedQueuer) Leave(ctx context.Context, r engine.LeaveRequest) error {
	t.r.add(false, false, span{})
	return t.q.Leave(ctx, r)
}
