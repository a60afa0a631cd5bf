package enginetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// Environment variables of the randomized checker (docs/SAFETY.md, "The
// randomized checker").
const (
	// SeedEnv runs one round, of this seed, instead of random ones: the
	// rerun a failure prints.
	SeedEnv = "DISTLOCK_CHECK_SEED"
	// LongEnv asks for the long mode: "1" (3 minutes per engine) or a
	// duration per engine.
	LongEnv = "DISTLOCK_CHECK_LONG"
)

// checkConfig is the size and the time budget of a checker run.
type checkConfig struct {
	seeds    []uint64 // one round each; nil: random rounds until budget
	budget   time.Duration
	clients  int
	names    int
	ops      int
	shrinkIn time.Duration
	seqOnly  bool    // only the sequential replay (the mutants' runs)
	sets     bool    // sets of locks in the schedules (not in the mutants' runs, whose seeds were recorded without)
	scenes   []scene // directed schedules, each run concurrently sceneRuns times before the seeds
}

// configFromEnv reads SeedEnv and LongEnv.
func configFromEnv(t *testing.T) checkConfig {
	cfg := checkConfig{budget: 6 * time.Second, clients: 4, names: 3, ops: 20, shrinkIn: 45 * time.Second, sets: true, scenes: []scene{queueScene, restartScene}}
	if v := os.Getenv(LongEnv); v != "" && v != "0" {
		cfg.budget, cfg.clients, cfg.ops = 3*time.Minute, 6, 40
		if d, err := time.ParseDuration(v); err == nil {
			cfg.budget = d
		}
	}
	if v := os.Getenv(SeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, v, err)
		}
		cfg.seeds, cfg.scenes = []uint64{seed}, nil
	}
	return cfg
}

// Check runs the randomized, differential checker on the backend as the
// subtest "Checker": rounds of random concurrent histories (several
// Clients, each on its own engine from h.New, on a few shared names, every
// kind of lock the engine keeps, short ttls, dead and killed holders),
// each judged by the locks' sequential specification; and, for each
// round, the same seed's schedule run one operation at a time (no
// expiry) on the engine and on a fresh embedded engine, whose answers
// must agree. A failure prints its seed and a shrunk schedule; rerun it
// with DISTLOCK_CHECK_SEED=<seed> and -run '<test>/Checker'. Short by
// default (about 6 s of rounds); DISTLOCK_CHECK_LONG=1 runs for minutes.
func Check(t *testing.T, h Harness) {
	t.Run("Checker", func(t *testing.T) {
		if err := runChecker(t, h, configFromEnv(t)); err != nil {
			t.Fatal(err)
		}
	})
}

// runChecker runs rounds until the budget is spent (or the given seeds are
// done) and returns the first failure's report.
func runChecker(t *testing.T, h Harness, cfg checkConfig) error {
	probe := h.New(t)
	caps := engine.CapabilitiesOf(probe)
	g := genConfig{clients: cfg.clients, names: cfg.names, ops: cfg.ops, fair: caps.Fair, sets: cfg.sets}
	g.base = max(150*time.Millisecond, caps.FitTTL(150*time.Millisecond))
	sh, shared := probe.(engine.Sharer)
	g.shared = shared
	ctx, cancel := context.WithTimeout(context.Background(), cfg.budget+cfg.shrinkIn+time.Minute)
	defer cancel()
	if shared {
		_, err := sh.SetLimit(ctx, lockName(t)+"-probe", 2)
		g.semaphores = !errors.Is(err, errors.ErrUnsupported)
	}
	_, g.lister = probe.(engine.Lister)
	_, g.forcer = probe.(engine.ForceReleaser)
	_, g.holderForce = probe.(engine.HolderReleaser)
	g.drops = h.Faulty != nil
	tm := timing{fit: caps.FitTTL, slack: 150*time.Millisecond + 2*caps.TTLGranularity, fair: caps.Fair, votes: h.Votes, tokens: !h.UncheckedTokens}
	faulted := tm // the concurrent histories, with the faults' slack
	if f := h.Faults; f != nil {
		g.stalls, g.restarts = f.Stall != nil, f.Restart != nil
		faulted.slack += f.Slack
		faulted.renews = f.Renews
	}
	memTiming := timing{fit: func(d time.Duration) time.Duration { return d }, slack: tm.slack, tokens: tm.tokens}
	t.Logf("checker: %d clients x %d ops on %d names, ttls from %v, budget %v; semaphores %v, rw %v, fair %v, list %v, force-release %v, lost replies %v, stalls %v, restarts %v, sets %v",
		g.clients, g.ops, g.names, g.base, cfg.budget, g.semaphores, g.shared, g.fair, g.lister, g.forcer, g.drops, g.stalls, g.restarts, g.sets)

	// One engine per client, kept for every round (the harness closes them
	// when the test ends): a pool or connection per round would pile up.
	type faulty struct {
		e    engine.Engine
		drop func()
	}
	engines := map[int]faulty{}
	newEngine := func(i int) (engine.Engine, func()) {
		f, ok := engines[i]
		switch {
		case ok:
		case h.Faulty != nil:
			f.e, f.drop = h.Faulty(t)
		default:
			f.e = h.New(t)
		}
		engines[i] = f
		return f.e, f.drop
	}
	concurrent := func(s schedule) ([]string, *history) {
		hist := runSchedule(ctx, s, lockName(t), h.Faults, newEngine)
		return judge(hist, faulted), hist
	}
	sequential := func(s schedule) ([]string, *history) {
		prefix := lockName(t)
		hist := runSchedule(ctx, s, prefix, nil, newEngine)
		mem := memory.New()
		defer func() { _ = mem.Close() }()
		var refEngine engine.Engine = mem
		if h.UncheckedTokens {
			refEngine = untokened{mem}
		}
		ref := runSchedule(ctx, s, prefix, nil, func(int) (engine.Engine, func()) { return refEngine, nil })
		bad := judge(hist, tm)
		bad = append(bad, judge(ref, memTiming)...)
		return append(bad, differ(hist, ref)...), hist
	}
	start := time.Now()
	seeds, base := cfg.seeds, rand.Uint64()>>1
	rounds, ops, faults := 0, 0, map[opKind]int{}
	for _, sc := range cfg.scenes {
		s, ok := sc(g)
		for i := 0; ok && !cfg.seqOnly && i < sceneRuns; i++ {
			bad, hist := concurrent(s)
			rounds, ops = rounds+1, ops+s.ops()
			for _, k := range []opKind{opGhost, opRestart} {
				faults[k] += s.count(k)
			}
			if len(bad) > 0 {
				small, smallBad, smallHist := shrink(s, bad, hist, concurrent, time.Now().Add(cfg.shrinkIn))
				return failure(t, 0, "directed", s, bad, small, smallBad, smallHist)
			}
		}
	}
	for i := 0; cfg.seeds != nil && i < len(seeds) || cfg.seeds == nil && (i == 0 || time.Since(start) < cfg.budget); i++ {
		seed := base + uint64(i)
		if cfg.seeds != nil {
			seed = seeds[i]
		}
		for _, mode := range []struct {
			name string
			seq  bool
			run  func(schedule) ([]string, *history)
		}{{"concurrent", false, concurrent}, {"sequential", true, sequential}} {
			if cfg.seqOnly && !mode.seq {
				continue
			}
			s := generate(seed, g, mode.seq)
			bad, hist := mode.run(s)
			rounds++
			ops += s.ops()
			for _, k := range []opKind{opKill, opGhost, opDrop, opStall, opRestart} {
				faults[k] += s.count(k)
			}
			if len(bad) == 0 {
				continue
			}
			small, smallBad, smallHist := shrink(s, bad, hist, mode.run, time.Now().Add(cfg.shrinkIn))
			return failure(t, seed, mode.name, s, bad, small, smallBad, smallHist)
		}
	}
	t.Logf("checker: %d histories (%d operations) in %v, no violation; faults: %d kills, %d ghost waiters, %d lost replies, %d stalls, %d restarts",
		rounds, ops, time.Since(start).Round(time.Millisecond), faults[opKill], faults[opGhost], faults[opDrop], faults[opStall], faults[opRestart])
	return nil
}

// failure writes the report of a failed round: the seed and how to rerun
// it, the violations, the shrunk schedule and a history of it.
func failure(t *testing.T, seed uint64, mode string, s schedule, bad []string, small schedule, smallBad []string, hist *history) error {
	var b strings.Builder
	top, _, _ := strings.Cut(t.Name(), "/")
	rerun := fmt.Sprintf("-run '^%s$/^%s$' <package>", top, strings.TrimPrefix(t.Name(), top+"/"))
	if mode == "directed" {
		fmt.Fprintf(&b, "checker: the directed schedule broke the specification\nrerun (it runs first): go test -race %s\n", rerun)
	} else {
		fmt.Fprintf(&b, "checker: seed %d (%s schedule) broke the specification\nrerun: %s=%d go test -race %s\n", seed, mode, SeedEnv, seed, rerun)
	}
	fmt.Fprintf(&b, "violations (%d ops):\n", s.ops())
	for _, v := range bad[:min(len(bad), 5)] {
		b.WriteString("  " + v + "\n")
	}
	fmt.Fprintf(&b, "shrunk to %d ops:\n%s", small.ops(), small)
	b.WriteString("violations of the shrunk schedule:\n")
	for _, v := range smallBad[:min(len(smallBad), 5)] {
		b.WriteString("  " + v + "\n")
	}
	if hist != nil {
		b.WriteString("a history of the shrunk schedule:\n")
		evs := slices.Clone(hist.Events)
		slices.SortStableFunc(evs, func(a, b *event) int { return cmp.Compare(a.Inv, b.Inv) })
		for _, e := range evs[:min(len(evs), 150)] {
			b.WriteString("  " + e.String() + "\n")
		}
	}
	return errors.New(b.String())
}

// untokened is the embedded engine checking no grant token in renewals and
// releases (engine.ExtendRequest.Token), as an engine whose harness says
// UncheckedTokens does not: the differential's reference for it. A
// release by an owner then drops its hold whatever the grant, as such an
// engine's does.
type untokened struct{ *memory.Engine }

// Extend implements engine.Engine, the requests' tokens left out.
func (u untokened) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	rs = slices.Clone(rs)
	for i := range rs {
		rs[i].Token = 0
	}
	return u.Engine.Extend(ctx, rs)
}

// Release implements engine.Engine, the request's token left out.
func (u untokened) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	r.Token = 0
	return u.Engine.Release(ctx, r)
}

// ReleaseOnce implements engine.OnceReleaser, the request's token left
// out: the embedded engine's own, promoted, would check it.
func (u untokened) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	r.Token = 0
	return u.Engine.ReleaseOnce(ctx, r, id)
}
