package enginetest

import (
	"sync/atomic"
	"testing"
	"time"
)

// A property with a time bound by design (loss signalled at the lease's
// deadline, a renewal sent within one renew interval) is checked against
// what the mechanism recorded, with slack for how late this machine ran
// what it scheduled, measured while the test ran. A machine too slow to
// judge the bound skips the test; a bound broken on a machine that kept
// up fails it. Speeds are the benchmarks' (BenchHandoff, BenchLoss).

const (
	// probeTick is how often the probe asks to run.
	probeTick = time.Millisecond
	// schedBase is the slack every bound gets beyond the measured delay:
	// a timer's own resolution and the few steps between the event and
	// its record.
	schedBase = 20 * time.Millisecond
	// schedFactor multiplies the worst delay measured: the event judged
	// may have been delayed a few times as long as the probe was.
	schedFactor = 3
)

// Probe measures how late this process runs what it scheduled: a
// goroutine asks to wake every probeTick and records the worst lateness.
// Engines' own tests use it for their time bounds too.
type Probe struct {
	worst atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// StartProbe starts a probe that runs until the test ends.
func StartProbe(t testing.TB) *Probe {
	p := &Probe{stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	t.Cleanup(func() { close(p.stop); <-p.done })
	return p
}

func (p *Probe) run() {
	defer close(p.done)
	timer := time.NewTimer(probeTick)
	defer timer.Stop()
	for {
		at := time.Now()
		timer.Reset(probeTick)
		select {
		case <-p.stop:
			return
		case <-timer.C:
		}
		if late := time.Since(at) - probeTick; late > time.Duration(p.worst.Load()) {
			p.worst.Store(int64(late))
		}
	}
}

// Delay is the worst scheduling delay measured so far.
func (p *Probe) Delay() time.Duration { return time.Duration(p.worst.Load()) }

// Slack is the allowance for scheduling a bound gets: schedBase plus
// schedFactor times the worst delay measured.
func (p *Probe) Slack() time.Duration { return schedBase + schedFactor*p.Delay() }

// TB is the part of testing.TB that Bounded uses.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Bounded judges a time that the mechanism bounds: got (what the test
// measured of what) must not exceed allowed (the bound plus the slack it
// gets). When it does, and machine (what the machine's own slowness, as
// measured in the test, accounts for) reached limit (the most the bound
// can tell apart from a broken mechanism), the test skips as run on a
// machine too slow; otherwise it fails.
func Bounded(t TB, what string, got, allowed, machine, limit time.Duration) {
	t.Helper()
	if got <= allowed {
		return
	}
	if machine >= limit {
		t.Skipf("machine too slow: measured scheduling delay %v (from %v on, the bound cannot be judged): %s took %v, allowed %v",
			machine, limit, what, got, allowed)
	}
	t.Fatalf("%s took %v, want at most %v (what the machine's slowness accounts for: %v)", what, got, allowed, machine)
}
