package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// The conformance suite checks properties; the speeds that used to be
// asserted there are measured here, by benchmarks each engine's tests run
// on their own backend:
//
//	func BenchmarkHandoff(b *testing.B) {
//		enginetest.BenchHandoff(b, func(b *testing.B) engine.Engine { ... })
//	}
//
// newEngine returns a new engine on the backend; every engine it returns
// in one benchmark must share one lock authority. The benchmark closes them.

// BenchHandoff measures hand-offs: from a holder's release to the grant to
// a waiter that waited for the lock on another engine (woken by the
// release). It reports the median as ns/handoff and the 90th percentile as
// p90-ns/handoff.
func BenchHandoff(b *testing.B, newEngine func(b *testing.B) engine.Engine) {
	holderC := benchClient(b, newEngine(b))
	wrapped, counts := countCalls(newEngine(b))
	waiterC := benchClient(b, wrapped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := fmt.Sprintf("bench-handoff-%x", rand.Uint64())
	gaps := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		_, r := handoffOnce(b, ctx, holderC, waiterC, counts, name)
		if r.err != nil {
			b.Fatal(r.err)
		}
		gaps = append(gaps, r.at.Sub(r.released))
	}
	b.StopTimer()
	reportQuantiles(b, gaps, "handoff")
}

// BenchLoss measures how late a lease without renewal is signalled lost
// after its local deadline (Lease.Deadline): the lease's own timer, which
// the Client's watchdog does not wait for. It reports the median as
// ns/late-loss and the 90th percentile as p90-ns/late-loss. Each lease has
// the engine's least ttl (at least distlock.MinTTL).
func BenchLoss(b *testing.B, newEngine func(b *testing.B) engine.Engine) {
	e := newEngine(b)
	ttl := max(distlock.MinTTL, engine.CapabilitiesOf(e).MinTTL)
	c := benchClient(b, e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := fmt.Sprintf("bench-loss-%x", rand.Uint64())
	lates := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		l, err := c.Acquire(ctx, fmt.Sprintf("%s-%d", prefix, i), distlock.WithTTL(ttl), distlock.WithAutoRenew(false))
		if err != nil {
			b.Fatal(err)
		}
		<-l.Done()
		var lost *distlock.LostError
		if !errors.As(l.Err(), &lost) {
			b.Fatalf("lease ended with %v, want a *LostError", l.Err())
		}
		lates = append(lates, lost.At.Sub(l.Deadline()))
	}
	b.StopTimer()
	reportQuantiles(b, lates, "late-loss")
}

// benchClient returns a Client on e, closed when the benchmark ends.
func benchClient(b *testing.B, e engine.Engine) *distlock.Client {
	c := distlock.New(e)
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// reportQuantiles reports the median of ds as ns/unit and the 90th
// percentile as p90-ns/unit.
func reportQuantiles(b *testing.B, ds []time.Duration, unit string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "ns/"+unit)
	b.ReportMetric(float64(ds[len(ds)*9/10].Nanoseconds()), "p90-ns/"+unit)
}
