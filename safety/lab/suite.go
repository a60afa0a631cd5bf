package lab

import (
	"context"
	"fmt"
	"time"
)

// Suite is a list of runs.
type Suite struct {
	Name string
	Runs []RunSpec
}

// QuickSuite is the CI suite: the scenarios whose controls must have teeth
// (1, 4, 8, 10) and the killed holder (12) in single-node mode, 1, 8 and 10
// in Redlock mode, and the three negative controls; a few seconds each.
// Then the waiter-queue scenarios 13-16 and their control (queue hidden),
// and the election (17) and its control (leaders ignoring their loss).
func QuickSuite(seed uint64) Suite {
	const ttl, d = 500 * time.Millisecond, 6 * time.Second
	var runs []RunSpec
	for _, id := range []int{1, 4, 8, 10, 12} {
		runs = append(runs, RunSpec{Scenario: ScenarioByID(id), Mode: Single, TTL: ttl, Duration: d, Seed: seed})
	}
	for _, id := range []int{1, 8, 10} {
		runs = append(runs, RunSpec{Scenario: ScenarioByID(id), Mode: Redlock, TTL: ttl, Duration: d, Seed: seed})
	}
	// The negative controls run longer: a violation needs a fault to line
	// up with a grant, and a 6 s run sometimes has one chance only.
	const nc = 3 * d
	runs = append(runs,
		RunSpec{Scenario: ScenarioByID(2), Mode: Redlock, Control: NoValidity, TTL: ttl, Duration: nc, Seed: seed},
		RunSpec{Scenario: ScenarioByID(6), Mode: Redlock, Control: NoFencing, TTL: ttl, Duration: nc, Seed: seed},
		RunSpec{Scenario: ScenarioByID(2), Mode: Single, Control: FromReply, TTL: ttl, Duration: nc, Seed: seed},
	)
	// The waiter queue (single-node mode): each fault class once, and its
	// negative control. WaiterTTL (3 s) and ReserveTTL (250 ms) do not
	// scale with the ttl: the paused head (14) needs room for a 3.5-4.5 s
	// pause.
	for _, q := range []struct {
		id int
		d  time.Duration
	}{{13, 8 * time.Second}, {14, 10 * time.Second}, {15, 8 * time.Second}, {16, 6 * time.Second}} {
		runs = append(runs, RunSpec{Scenario: ScenarioByID(q.id), Mode: Single, TTL: ttl, Duration: q.d, Seed: seed})
	}
	runs = append(runs, RunSpec{Scenario: ScenarioByID(15), Mode: Single, Control: NoQueue, TTL: ttl, Duration: 8 * time.Second, Seed: seed})
	// The election (single-node mode): three campaigners under mixed
	// faults for 20 s, and its negative control (leaders that ignore
	// their loss signal).
	runs = append(runs,
		RunSpec{Scenario: ScenarioByID(17), Mode: Single, TTL: ttl, Duration: 20 * time.Second, Seed: seed},
		RunSpec{Scenario: ScenarioByID(17), Mode: Single, Control: IgnoreLoss, TTL: ttl, Duration: 10 * time.Second, Seed: seed},
	)
	// etcd (ttl 2 s, its minimum): the paused holder (the Jepsen finding
	// on the control, none on etcdfence) and the killed leader; PostgreSQL
	// (ttl 500 ms): the paused holder and the stalled link, pgfence's
	// transactional check on the fenced copy.
	runs = append(runs,
		RunSpec{Scenario: ScenarioByID(18), Mode: Etcd, TTL: EtcdTTL, Duration: 14 * time.Second, Seed: seed},
		RunSpec{Scenario: ScenarioByID(19), Mode: Etcd, TTL: EtcdTTL, Duration: 10 * time.Second, Seed: seed},
		RunSpec{Scenario: ScenarioByID(21), Mode: Postgres, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(24), Mode: Postgres, TTL: ttl, Duration: d, Seed: seed},
	)
	// Shared locks (single-node Redis): the semaphore and the RW lock under
	// mixed faults, and the control that must fail I12 / I13.
	runs = append(runs,
		RunSpec{Scenario: ScenarioByID(26), Mode: Single, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(27), Mode: Single, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(26), Mode: Single, Control: Split, TTL: ttl, Duration: 4 * time.Second, Seed: seed},
	)
	// ZooKeeper (ttl ZKTTL, three members): the paused holder past its
	// session (the control must lose updates, zkfence none), the killed
	// leader and the members restarted in turn.
	runs = append(runs, zkRuns(seed)...)
	// Sentinel (ttl SentinelTTL): one failover to a replica that missed
	// the last grant, and the control without the time floor.
	runs = append(runs, sentinelRuns(seed)...)
	// The negative controls of I5, I6, I7 and I9 (controls.go).
	runs = append(runs, controlRuns(seed)...)
	return Suite{Name: "quick", Runs: runs}
}

// FullSuite is every scenario in every mode it applies to (the queue
// scenarios 13-16 in single-node mode), plus the negative controls, with
// ttl 1s and per-run duration d.
func FullSuite(seed uint64, d time.Duration) Suite {
	const ttl = time.Second
	var runs []RunSpec
	for _, s := range Scenarios {
		if s.Sentinel {
			continue // sentinelRuns, below
		}
		if s.Backend != "" {
			runs = append(runs, RunSpec{Scenario: s, Mode: s.Mode(), TTL: backendTTL(s, ttl), Duration: max(d, 15*backendTTL(s, ttl)), Seed: seed})
			continue
		}
		for _, m := range []Mode{Single, Redlock} {
			if (m.Redlock && s.Redlock) || (!m.Redlock && s.Single) {
				runs = append(runs, RunSpec{Scenario: s, Mode: m, TTL: ttl, Duration: d, Seed: seed})
			}
		}
	}
	runs = append(runs,
		RunSpec{Scenario: ScenarioByID(2), Mode: Single, Control: NoValidity, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(2), Mode: Redlock, Control: NoValidity, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(6), Mode: Redlock, Control: NoFencing, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(2), Mode: Single, Control: FromReply, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(2), Mode: Redlock, Control: FromReply, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(15), Mode: Single, Control: NoQueue, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(17), Mode: Single, Control: IgnoreLoss, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(26), Mode: Single, Control: Split, TTL: ttl, Duration: d, Seed: seed},
		RunSpec{Scenario: ScenarioByID(27), Mode: Single, Control: Split, TTL: ttl, Duration: d, Seed: seed},
	)
	runs = append(runs, zkFenceOff(seed))
	runs = append(runs, sentinelRuns(seed)...)
	runs = append(runs, controlRuns(seed)...)
	return Suite{Name: "full", Runs: runs}
}

// sentinelRuns are the Sentinel failover (one per run, whatever the
// duration) and its control without the time floor: warm-up 1 ttl, the
// failover (a few seconds), then 2 ttl and a grant after the heal.
func sentinelRuns(seed uint64) []RunSpec {
	const d = 5 * SentinelTTL
	s := ScenarioByID(SentinelFailoverID)
	return []RunSpec{
		{Scenario: s, Mode: SentinelMode, TTL: SentinelTTL, Duration: d, Seed: seed},
		{Scenario: s, Mode: SentinelMode, Control: NoTimeFloor, TTL: SentinelTTL, Duration: d, Seed: seed},
	}
}

// Filter keeps the runs for which keep returns true.
func (s Suite) Filter(keep func(RunSpec) bool) Suite {
	var runs []RunSpec
	for _, r := range s.Runs {
		if keep(r) {
			runs = append(runs, r)
		}
	}
	s.Runs = runs
	return s
}

// Execute runs the suite one run at a time.
func (s Suite) Execute(ctx context.Context, o Options) ([]*Outcome, error) {
	var out []*Outcome
	for i, spec := range s.Runs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if o.Logf != nil {
			o.Logf("[%d/%d] %s (%v)", i+1, len(s.Runs), spec.Key(), spec.Duration)
		}
		res, err := Execute(ctx, spec, o)
		if err != nil {
			return out, fmt.Errorf("run %s: %w", spec.Key(), err)
		}
		if o.Logf != nil {
			o.Logf("    %s", Summary(res))
			if len(res.Result.OutOfOrder) > 0 {
				o.Logf("    fair order:\n%s", OrderDetails(res, 3))
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// backendTTL is the ttl of a backend scenario's runs: EtcdTTL on etcd
// (its minimum), ZKTTL on ZooKeeper, ttl otherwise.
func backendTTL(s *Scenario, ttl time.Duration) time.Duration {
	switch s.Backend {
	case Etcd.Backend:
		return EtcdTTL
	case ZooKeeper.Backend:
		return ZKTTL
	}
	return ttl
}

// zkRuns are the quick suite's ZooKeeper runs.
func zkRuns(seed uint64) []RunSpec {
	return []RunSpec{
		{Scenario: ScenarioByID(29), Mode: ZooKeeper, TTL: ZKTTL, Duration: 10 * time.Second, Seed: seed},
		{Scenario: ScenarioByID(30), Mode: ZooKeeper, TTL: ZKTTL, Duration: 10 * time.Second, Seed: seed},
		{Scenario: ScenarioByID(31), Mode: ZooKeeper, TTL: ZKTTL, Duration: 10 * time.Second, Seed: seed},
	}
}

// zkFenceOff is the fence-off control on ZooKeeper (FullSuite): scenario
// 29 with the fenced copy written plainly; I5 must fail.
func zkFenceOff(seed uint64) RunSpec {
	return RunSpec{Scenario: ScenarioByID(29), Mode: ZooKeeper, Control: FenceOff, TTL: ZKTTL, Duration: 15 * ZKTTL, Seed: seed}
}
