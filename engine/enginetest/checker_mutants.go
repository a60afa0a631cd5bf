package enginetest

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// mutable is what a mutant wraps: an engine with every interface the
// checker and the Client's locks use (every engine of this repository has
// them all).
type mutable interface {
	engine.Engine
	engine.Sharer
	engine.Lister
	engine.ForceReleaser
	engine.HolderReleaser
	engine.Queuer
	engine.Describer
}

// mutantTimingLimit is the scheduling delay from which a concurrent
// history's timing is no longer its schedule's: a third of the shortest
// ttl the checker's schedules use (150 ms).
const mutantTimingLimit = 50 * time.Millisecond

// mutant is an engine broken in one way, which the checker must catch.
type mutant struct {
	name string
	seed uint64   // the seed that caught it on the embedded engine (docs/SAFETY.md)
	seq  uint64   // the seed whose sequential replay caught it there (0: none known)
	want []string // what the failure's violations may name
	wrap func(mutable) engine.Engine
}

// mutants are the wrapper mutants, in the order of docs/SAFETY.md's table:
// first the defects of issue 23 put back, then more.
var mutants = []mutant{
	{"cross-kind grant", 674156652518316756, 674156652518316756, []string{"exclusion:", "kinds:", "differential:"}, func(m mutable) engine.Engine { return crossKind{m} }},
	{"tokens backwards", 5333937543543745890, 5333937543543745890, []string{"tokens:"}, func(m mutable) engine.Engine { return &backwards{mutable: m} }},
	{"lease past deadline", 3055048744634355457, 0, []string{"refused while free", "view:", "differential:"}, func(m mutable) engine.Engine { return lingering{m} }},
	// Kicking the queue's waiters out to let a newcomer in can also end
	// in a grant a view does not show or two holders: caught all the same.
	{"skips the queue", 1406928578269760837, 0, []string{"queue:", "view:", "exclusion:"}, func(m mutable) engine.Engine { return queueSkipper{m} }},
	{"weights count 1", 4533365878454182644, 1059223225511466205, []string{"semaphore:", "argument:", "differential:"}, func(m mutable) engine.Engine { return lightWeights{m} }},
	{"writer shares", 2660202044666049339, 2660202044666049339, []string{"exclusion:", "differential:"}, func(m mutable) engine.Engine { return sharingWriter{m} }},
	{"release frees all", 4408479191399535950, 4408479191399535950, []string{"lost early", "view:", "refused while free", "differential:", "kinds:", "exclusion:"}, func(m mutable) engine.Engine { return releaseAll{m} }},
	{"inspect blind", 1876869466516342429, 1876869466516342429, []string{"view:", "differential:"}, func(m mutable) engine.Engine { return blindInspect{m} }},
}

// mutantScenes are the directed schedules of the mutants that random
// seeds show only in rare windows: each opens its mutant's window on
// every run (checkConfig.scenes).
var mutantScenes = map[string]scene{"skips the queue": queueScene, "lease past deadline": lingerScene}

// sequentialMutants are the mutants CheckMutants runs by default: those
// the sequential replay catches on any engine (a lease past its deadline
// and a skipped queue show only in concurrent histories, with timing).
var sequentialMutants = [...]string{"cross-kind grant", "tokens backwards", "weights count 1", "writer shares", "release frees all", "inspect blind"}

// CheckMutants shows, as the subtest "Mutants", that the randomized
// checker catches h's engines broken in one way each: the named mutants of
// docs/SAFETY.md's table (when none are named: cross-kind grant, tokens
// backwards, weights count 1, writer shares, release frees all, inspect
// blind, which the sequential replay catches on any engine; and, on a fair
// engine, skips the queue), each in a parallel subtest that wraps every
// engine h.New returns. Each runs the sequential replay (the engine's
// answers against the embedded engine's, and the specification) of the
// seed that caught it on the embedded engine, then of random seeds for up
// to 20 s, and stops at its first violation, which must name what the
// mutant broke; a mutant with a directed schedule (mutantScenes: the
// queue's, a newcomer across a release the queue's head is kept; the
// lease's deadline, tries after an unreleased lease's expiry) runs it and
// then concurrent rounds instead. The test fails if a mutant passes. A few
// seconds per mutant on any backend.
func CheckMutants(t *testing.T, h Harness, names ...string) {
	if len(names) == 0 {
		names = sequentialMutants[:]
		if engine.CapabilitiesOf(h.New(t)).Fair {
			names = append(names, "skips the queue")
		}
	}
	t.Run("Mutants", func(t *testing.T) {
		for _, name := range names {
			i := slices.IndexFunc(mutants, func(m mutant) bool { return m.name == name })
			if i < 0 {
				t.Fatalf("no mutant %q", name)
			}
			m := mutants[i]
			t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
				t.Parallel()
				hm := Harness{New: func(t *testing.T) engine.Engine {
					e, ok := h.New(t).(mutable)
					if !ok {
						t.Fatalf("%T lacks an interface the mutants wrap", e)
					}
					return m.wrap(e)
				}}
				cfg := checkConfig{seeds: []uint64{m.seq}, budget: 20 * time.Second, clients: 4, names: 3, ops: 20, seqOnly: true}
				if sc := mutantScenes[name]; sc != nil {
					// A mutant no sequential replay shows: its directed
					// schedule, then concurrent rounds.
					cfg = checkConfig{seeds: []uint64{}, budget: 20 * time.Second, clients: 4, names: 3, ops: 20, scenes: []scene{sc}}
				}
				catches(t, hm, cfg, m)
			})
		}
	})
}

// CheckCatches shows that the checker catches h's backend when it is
// broken on purpose (an engine-internal mutant, a backend that loses its
// data when Faults.Restart restarts it): it runs the checker's rounds on
// h, a directed schedule first when h restarts the backend (a restart
// between a grant and another request for the name), then the seeds
// (those that caught it before), then random ones for up to budget, stops
// at the first violation, and fails the test unless one comes that names
// one of want.
func CheckCatches(t *testing.T, h Harness, budget time.Duration, seeds []uint64, want ...string) {
	t.Helper()
	cfg := checkConfig{seeds: seeds, budget: budget, clients: 4, names: 3, ops: 20}
	if h.Faults != nil && h.Faults.Restart != nil {
		cfg.scenes = []scene{restartScene} // a restart that loses the locks, shown on purpose first
	}
	catches(t, h, cfg, mutant{name: t.Name(), want: want})
}

// catches runs the checker on the mutant's harness with the seeds of cfg,
// then random ones for cfg.budget, and fails the test unless a violation
// that m.want names comes.
func catches(t *testing.T, h Harness, cfg checkConfig, m mutant) {
	t.Helper()
	probe := StartProbe(t)
	err := runChecker(t, h, cfg)
	if err == nil && cfg.seeds != nil {
		cfg.seeds = nil
		err = runChecker(t, h, cfg)
	}
	if err == nil && !cfg.seqOnly && probe.Delay() >= mutantTimingLimit {
		// A concurrent history shows some mutants only in windows of
		// its timing (a ghost waiter keeping a free lock), which a
		// machine this late in running what it scheduled closes. The
		// sequential replay has no timing: it is never excused.
		t.Skipf("machine too slow: measured scheduling delay %v (from %v on, the histories' timing is not the schedule's): the %q mutant was not caught in the budget %v",
			probe.Delay(), mutantTimingLimit, m.name, cfg.budget)
	}
	if err == nil {
		t.Fatalf("the checker passed the %q mutant", m.name)
	}
	first, rest, _ := strings.Cut(err.Error(), "\nshrunk")
	// The violations of the shrunk schedule name the property too: on a
	// loaded machine the first history's may show the break by another of
	// its consequences first (a weight not refused, then a refusal while
	// free that only its grant explains).
	_, shrunk, _ := strings.Cut(rest, "violations of the shrunk schedule:")
	shrunk, _, _ = strings.Cut(shrunk, "a history of the shrunk schedule")
	for _, w := range m.want {
		if strings.Contains(first, w) || strings.Contains(shrunk, w) {
			head, rest, _ := strings.Cut(first, "\n")
			_, viol, _ := strings.Cut(rest, "violations")
			t.Logf("caught %q: %s%s", m.name, head, viol[:min(len(viol), 400)])
			return
		}
	}
	t.Fatalf("the checker failed the %q mutant, but not with %q:\n%v", m.name, m.want, err)
}

// crossKind grants a mutex beside shared holders (issue 23, item 1).
type crossKind struct{ mutable }

func (c crossKind) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Kind.Shared() {
		return c.mutable.Acquire(ctx, r)
	}
	if info, err := c.Inspect(ctx, r.Name); err == nil && info.Held && info.Kind.Shared() {
		return engine.Grant{Acquired: true, Token: info.HighWater + 1, Count: 1}, nil
	}
	return c.mutable.Acquire(ctx, r)
}

// backwards hands every third new grant (of the engine it wraps) half its
// token: below the ones before (issue 23, item 2: a token drawn before the
// grant won the row).
type backwards struct {
	mutable
	n atomic.Int64
}

func (b *backwards) lower(g engine.Grant) engine.Grant {
	if g.Acquired && g.Count == 1 && b.n.Add(1)%3 == 0 {
		g.Token /= 2
	}
	return g
}

func (b *backwards) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := b.mutable.Acquire(ctx, r)
	return b.lower(g), err
}

// lingering keeps every lease three times its ttl: a lease still valid in
// the authority past its deadline (issue 23, item 5).
type lingering struct{ mutable }

func (l lingering) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	r.TTL *= 3
	return l.mutable.Acquire(ctx, r)
}

func (l lingering) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	for i := range rs {
		if !rs[i].Waiter {
			rs[i].TTL *= 3
		}
	}
	return l.mutable.Extend(ctx, rs)
}

// queueSkipper lets a TryAcquire take a free lock that is kept for the
// waiters queued for it: it takes the waiters the engine lists queued
// (Info.Queue) out of the queue (they queue again at their next attempt)
// and grants the newcomer. It keeps no state of its own, so the Clients
// of a run, each with its own engine and wrapper, skip alike.
type queueSkipper struct{ mutable }

func (q queueSkipper) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := q.mutable.Acquire(ctx, r)
	if err != nil || g.Acquired || g.Holder != "" && !g.Reserved || r.Waiter != "" || r.Kind.Shared() {
		return g, err
	}
	info, err := q.Inspect(ctx, r.Name)
	if err != nil || len(info.Queue) == 0 {
		return g, nil
	}
	for _, w := range info.Queue {
		_ = q.Leave(ctx, engine.LeaveRequest{Name: r.Name, Waiter: w.ID, Kind: r.Kind})
	}
	return q.mutable.Acquire(ctx, r)
}

// lightWeights counts every semaphore request as one permit.
type lightWeights struct{ mutable }

func (l lightWeights) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Kind == engine.Semaphore {
		r.Weight = 1
	}
	return l.mutable.Acquire(ctx, r)
}

// sharingWriter takes a reader-writer lock's write side as one permit, so
// that readers share with the writer.
type sharingWriter struct{ mutable }

func (s sharingWriter) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Kind == engine.RWLock && r.Weight == engine.RWPermits {
		r.Weight = 1
	}
	return s.mutable.Acquire(ctx, r)
}

// releaseAll frees every holder of a shared lock when one releases.
type releaseAll struct{ mutable }

func (a releaseAll) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	res, err := a.mutable.Release(ctx, r)
	if err == nil && res.Status == engine.Released && r.Kind.Shared() {
		_, err = a.ForceRelease(ctx, r.Name)
	}
	return res, err
}

// blindInspect reports every mutex free.
type blindInspect struct{ mutable }

func (b blindInspect) Inspect(ctx context.Context, name string) (engine.Info, error) {
	info, err := b.mutable.Inspect(ctx, name)
	if info.Kind == 0 {
		info.Held, info.Owner, info.Holders = false, "", nil
	}
	return info, err
}
