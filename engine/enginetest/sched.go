package enginetest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/quorum"
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

// grantInTime judges the error of a grant (or extension) of a short ttl
// asked at asked.
// A grant whose reply came after its validity was used up is refused, by
// the Client or by a quorum: on a machine that took most of the ttl for
// the round trip, that is the mechanism working, and the test skips as
// run on a machine too slow, with the round trip it measured. Any other
// error, or a refusal well within the ttl, fails the test.
func grantInTime(t TB, what string, err error, ttl time.Duration, asked time.Time) {
	t.Helper()
	if err == nil {
		return
	}
	if took := time.Since(asked); ValidityUsedUp(err) && took >= ttl*9/10 {
		t.Skipf("machine too slow: %s took %v of its %v ttl: %v", what, took, ttl, err)
	}
	t.Fatalf("%s: %v", what, err)
}

// ValidityUsedUp reports whether err refuses a grant or extension that
// came too late: a quorum's ErrValidityUsedUp, the Client's own (not
// exported), or, for an Extend, the lease lost as expired.
func ValidityUsedUp(err error) bool {
	var be *distlock.BackendError
	var lost *distlock.LostError
	return errors.Is(err, quorum.ErrValidityUsedUp) ||
		errors.As(err, &be) && be.Err != nil && be.Err.Error() == "grant arrived after its validity was used up" ||
		errors.As(err, &lost) && lost.Cause == distlock.Expired
}
