package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/safety/check"
	"github.com/distlock/distlock/safety/history"
)

// The negative controls of I5, I6, I7, I9 and I11: each breaks what one
// check guards, in a short run, and the run fails unless that check
// reports the violation.
//
//	FenceOff      I5   the fenced copy written with plain commands
//	                   (client.Config.NoFence); scenario 1, a paused holder
//	                   writes after a newer holder applied
//	LateLoss      I6   the library's lease, its loss told LateLoss late
//	                   (client.ImplLateLoss); scenario 5, a partitioned
//	                   holder's lease expires
//	HealLate      I7   the node SIGSTOPped for ttl, and 4 ttl more that the
//	                   history does not record: the service comes back
//	                   4 ttl after the heal the history shows
//	LongPause     I9   a queue scenario whose node is SIGSTOPped for
//	                   check.QueueBound + 3 ttl while clients wait
//	ClockBack     I11  the election's node runs 30 s ahead for one
//	                   election, then restarts empty with its clock right:
//	                   the time floor cannot keep the terms in order

// controlRuns are the runs of these controls (QuickSuite and FullSuite).
func controlRuns(seed uint64) []RunSpec {
	const ttl = 500 * time.Millisecond
	return []RunSpec{
		{Scenario: ScenarioByID(1), Mode: Single, Control: FenceOff, TTL: ttl, Duration: 5 * time.Second, Seed: seed},
		{Scenario: ScenarioByID(5), Mode: Single, Control: LateLoss, TTL: ttl, Duration: 6 * time.Second, Seed: seed},
		{Scenario: ScenarioByID(7), Mode: Single, Control: HealLate, TTL: ttl, Duration: 4 * time.Second, Seed: seed},
		{Scenario: ScenarioByID(15), Mode: Single, Control: LongPause, TTL: ttl, Duration: 9 * time.Second, Seed: seed},
		{Scenario: ScenarioByID(17), Mode: Single, Control: ClockBack, TTL: ttl, Duration: 5 * time.Second, Seed: seed},
	}
}

// controlInject is the fault a control injects instead of its scenario's
// (nil: the scenario's own).
func controlInject(c Control) func(context.Context, *env) {
	switch c {
	case HealLate:
		return pauseHealLate
	case LongPause:
		return pausePastQueueBound
	case ClockBack:
		return clockAheadThenRestart
	}
	return nil
}

// controlExpect is what these controls must show (Control.Expect).
func controlExpect(c Control) string {
	switch c {
	case FenceOff:
		return "I5 not linearizable"
	case LateLoss:
		return "I6 late loss signals"
	case HealLate:
		return "I7 slow recovery"
	case LongPause:
		return "I9 lock free past the bound while a client waits"
	case ClockBack:
		return "I11 term inversions"
	}
	return ""
}

// controlMissed says what a run of these controls failed to show ("": it
// showed it, or c is not one of them).
func controlMissed(c Control, r check.Result) string {
	switch {
	case c == FenceOff && r.Linearizable != "violation":
		return fmt.Sprintf("the fenced history was not found non-linearizable (I5 %s, %d stale applies)", r.Linearizable, r.StaleFenced)
	case c == LateLoss && r.Late == 0:
		return fmt.Sprintf("no late loss signal detected (%d signals, %d excluded)", len(r.Lags), r.Excluded)
	case c == HealLate && r.Slow == 0:
		return fmt.Sprintf("no slow recovery detected (recoveries %v)", r.Recoveries)
	case c == LongPause && r.FreeOver == 0:
		return fmt.Sprintf("the lock was not found free past %v while a client waited (longest %v)", check.QueueBound, r.LongestFree.Round(time.Millisecond))
	case c == ClockBack && r.TermInversions == 0:
		return fmt.Sprintf("no term inversion detected (%d leaderships)", len(r.Leaderships))
	}
	return ""
}

// pauseHealLate (HealLate): right after a lease check, node 0 SIGSTOPped
// for ttl; the fault recorded as healed then, the node resumed 4 ttl
// later; once per run.
func pauseHealLate(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	ttl := e.spec.TTL
	start := time.Now()
	if err := e.nodes[0].Pause(); err != nil {
		e.logf("pause: %v", err)
		return
	}
	time.Sleep(ttl)
	e.fault(7, "node0", "SIGSTOP ttl (and 4 ttl unrecorded)", start, time.Now())
	// The server probe is told, as the history is not: node 0's silence
	// is the control's, not a starved machine's.
	release := e.probe.hold("node0")
	time.Sleep(4 * ttl)
	_ = e.nodes[0].Resume()
	release()
	<-ctx.Done() // once per run
}

// pausePastQueueBound (LongPause): right after a lease check, node 0
// SIGSTOPped for check.QueueBound + 3 ttl (recorded as it is); once per
// run.
func pausePastQueueBound(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	d := check.QueueBound + 3*e.spec.TTL
	start := time.Now()
	if err := e.nodes[0].Pause(); err != nil {
		e.logf("pause: %v", err)
		return
	}
	time.Sleep(d)
	_ = e.nodes[0].Resume()
	e.fault(7, "node0", fmt.Sprintf("SIGSTOP %v", d), start, time.Now())
	<-ctx.Done() // once per run
}

// clockAheadThenRestart (ClockBack): right after a leader's lease check,
// node 0's fencing high-water moved to its time + 30 s (the terms a clock
// that far ahead gives); at the next election (its term from there), the
// node killed and restarted empty (the high-water lost, the clock right
// again); once per run.
func clockAheadThenRestart(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	elected := e.rec.Watch(func(ev history.Event) bool {
		return ev.Kind == history.KindAcquire && ev.Result == history.OK
	})
	now := time.Now()
	if _, err := e.jump(0, 30*time.Second, false); err != nil {
		e.logf("skew: %v", err)
	}
	e.fault(6, "node0", "clock 30 s ahead (fencing high-water)", now, now)
	select {
	case <-elected:
	case <-ctx.Done():
		return
	}
	start := time.Now()
	if err := e.nodes[0].Restart(); err != nil {
		e.logf("restart: %v", err)
	}
	e.fault(8, "node0", "killed, restarted empty at once (clock right)", start, time.Now())
	<-ctx.Done()
}
