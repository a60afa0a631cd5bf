package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distlock/distlock/safety/check"
	"github.com/distlock/distlock/safety/history"
)

// Options are what every run of a suite shares.
type Options struct {
	// Exe is the argv that starts a process client (a binary that calls
	// client.ProcessMain when client.ConfigEnv is set).
	Exe []string
	// Dir receives one history (.jsonl) per run, and porcupine's
	// visualisation of any I5 failure.
	Dir string
	// SignalTolerance and Backoff: see check.Params.
	SignalTolerance time.Duration
	Backoff         time.Duration
	// Logf reports progress (may be nil).
	Logf func(string, ...any)
}

// Outcome is one run's result.
type Outcome struct {
	Spec     RunSpec
	Result   check.Result
	Problems []string // why the run fails; empty when it passes
	History  string
	Took     time.Duration
}

// Execute runs spec and checks its history.
func Execute(ctx context.Context, spec RunSpec, o Options) (*Outcome, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	began := time.Now()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(o.Dir, spec.Key()+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec := history.NewRecorder(f)
	e, err := setup(spec, rec, o.Exe, func(format string, args ...any) {
		logf("%s: "+format, append([]any{spec.Key()}, args...)...)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: setup: %w", spec.Key(), err)
	}
	defer e.teardown()
	rec.Add(history.Event{Kind: history.KindRunStart, At: history.Now(), Name: e.name, TTL: int64(spec.TTL),
		Detail: fmt.Sprintf("scenario %d %s, mode %s, control %q, seed %d", spec.Scenario.ID, spec.Scenario.Key, spec.Mode.Name, spec.Control, spec.Seed)})
	e.probe = startServerProbe(rec, e.probeTargets())
	defer e.probe.stop()

	// Faults start after a warm-up and stop early enough for the last
	// heal to be followed by a grant (I7).
	tail := 2*spec.TTL + o.Backoff
	runCtx, cancel := context.WithTimeout(ctx, spec.Duration)
	defer cancel()
	faultCtx, cancelFaults := context.WithTimeout(runCtx, max(spec.Duration-tail, spec.TTL))
	defer cancelFaults()
	inject := spec.Scenario.Inject
	if f := controlInject(spec.Control); f != nil {
		inject = f
	}
	if sleep(faultCtx, spec.TTL) {
		for faultCtx.Err() == nil {
			inject(faultCtx, e)
			sleep(faultCtx, e.between(spec.TTL, 2*spec.TTL))
		}
	}
	<-runCtx.Done()
	rec.Add(history.Event{Kind: history.KindRunEnd, At: history.Now()})
	e.probe.stop() // its last windows, ending now
	e.stopClients()
	e.healNodes()
	time.Sleep(spec.TTL / 4) // writes still in flight land (or not)
	finalErr := e.finalState()
	if finalErr != nil {
		logf("%s: final state: %v", spec.Key(), finalErr)
	}
	if err := rec.Flush(); err != nil {
		return nil, fmt.Errorf("%s: history: %w", spec.Key(), err)
	}
	params := check.Params{
		TTL:              spec.TTL,
		SignalTolerance:  o.SignalTolerance,
		Backoff:          o.Backoff,
		LinearizeTimeout: 20 * time.Second,
		VisualizePath:    filepath.Join(o.Dir, spec.Key()+"-porcupine.html"),
	}
	params.Election = spec.Scenario.Elect
	if spec.Scenario.Queue {
		// A dead or stopped waiter at the head costs up to I9's bound
		// before the next grant.
		params.RecoveryBound = max(check.QueueBound, spec.TTL+o.Backoff)
	}
	params.Limit, params.Shared = spec.Scenario.Limit, spec.Scenario.Shared != ""
	if spec.Scenario.Recovery > 0 {
		params.RecoveryBound = spec.Scenario.Recovery
	}
	res := check.Run(rec.Events(), params)
	out := &Outcome{Spec: spec, Result: res, History: path, Took: time.Since(began)}
	out.Problems = judge(spec, res)
	if finalErr != nil {
		// The history has no final state: check.Run marks I4 (and I2's
		// final-set part) unjudged, which judge fails; the cause goes
		// with it.
		out.Problems = append(out.Problems, fmt.Sprintf("final state not read: %v", finalErr))
	}
	return out, nil
}

// judge lists what the run's result violates.
func judge(spec RunSpec, r check.Result) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	for _, u := range r.Unjudged {
		add("cannot judge: %s", u)
	}
	// The fence-off control breaks the fenced copy on purpose (its I5 is
	// what it must show).
	fenced := spec.Control != FenceOff
	if fenced && r.StaleFenced > 0 {
		add("I2: %d stale applies accepted by the fenced resource", r.StaleFenced)
	}
	if fenced && r.LostFenced > 0 {
		add("I4: %d acknowledged updates lost on the fenced resource", r.LostFenced)
	}
	if fenced && r.Linearizable == "violation" {
		add("I5: fenced resource history not linearizable (%s)", r.Visualization)
	}
	if r.Grants.OK == 0 {
		add("no grant at all")
	}
	switch spec.Control {
	case NoControl:
		if spec.Scenario.Excludes(spec.Mode) && len(r.Overlaps) > 0 {
			add("I1: %d overlapping validity windows", len(r.Overlaps))
		}
		if r.TokenInversions > 0 {
			add("I3: %d token inversions", r.TokenInversions)
		}
		if r.Late > 0 {
			add("I6: %d loss signals later than deadline + drift + tolerance", r.Late)
		}
		if r.Slow > 0 {
			add("I7: %d heals not followed by a grant within ttl + backoff", r.Slow)
		}
		if spec.Scenario.Teeth && r.LostControl == 0 && len(r.Overlaps) == 0 {
			add("no teeth: the unfenced control shows no lost update and no overlapping window")
		}
		if spec.Scenario.Queue {
			if n := len(r.OutOfOrder); n > 0 {
				add("I8: %d fair-order violations (a fair call granted while one started more than %v earlier still waited)", n, check.DefaultFairMargin)
			}
			if r.FreeOver > 0 {
				add("I9: the lock was free for longer than %v while a live client waited, %d times (longest %v)", check.QueueBound, r.FreeOver, r.LongestFree.Round(time.Millisecond))
			}
			if r.OrderPairs == 0 && !spec.Scenario.LosesQueue {
				add("I8 compared no pair of calls")
			}
		}
		if n := len(r.OverLimit); n > 0 {
			add("I12: %d times more than %d permits held (at most %d)", n, spec.Scenario.Limit, r.MaxHeld)
		}
		if n := len(r.WriterOverlaps); n > 0 {
			add("I13: %d times a writer held the lock with others", n)
		}
		if spec.Scenario.Sentinel {
			if r.Superseded+r.RefusedNewer > 0 {
				add("token order at the resource: %d superseded holders' applies accepted, %d newer holders' refused", r.Superseded, r.RefusedNewer)
			}
			if r.Faults == 0 {
				add("no failover")
			}
		}
		if spec.Scenario.Elect {
			if n := len(r.LeaderOverlaps); n > 0 {
				add("I10: %d pairs of leaderships overlap", n)
			}
			if r.TermInversions > 0 {
				add("I11: %d terms not above every earlier term", r.TermInversions)
			}
			if len(r.Leaderships) < 2 {
				add("fewer than 2 leaderships (%d)", len(r.Leaderships))
			}
		}
	case NoValidity, FromReply:
		if len(r.Overlaps) == 0 {
			add("negative control %s: no overlapping window detected", spec.Control)
		}
	case NoFencing:
		if r.TokenInversions == 0 {
			add("negative control %s: no token inversion detected", spec.Control)
		}
	case Split:
		if len(r.OverLimit)+len(r.WriterOverlaps) == 0 {
			add("negative control %s: no permit over the limit and no writer with others detected", spec.Control)
		}
	case IgnoreLoss:
		if len(r.LeaderOverlaps) == 0 {
			add("negative control %s: no overlapping leaderships detected (%d leaderships)", spec.Control, len(r.Leaderships))
		}
	case NoTimeFloor:
		if r.Superseded+r.RefusedNewer == 0 || r.TokenInversions == 0 {
			add("negative control %s: the resource kept the token order (%d superseded accepted, %d newer refused, %d token inversions)",
				spec.Control, r.Superseded, r.RefusedNewer, r.TokenInversions)
		}
	case NoQueue:
		if len(r.OutOfOrder) == 0 {
			add("negative control %s: no fair-order violation detected (%d pairs compared)", spec.Control, r.OrderPairs)
		}
	default:
		if miss := controlMissed(spec.Control, r); miss != "" {
			add("negative control %s: %s", spec.Control, miss)
		}
	}
	return p
}
