package enginetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// TestCheckerCatchesMutants shows that the randomized checker fails on
// engines broken in one way each (the embedded engine with one defect put
// in): first with the seed that caught the mutant before (docs/SAFETY.md,
// "The randomized checker"), then with random seeds for up to 30 s, and
// that the failure names the broken property. A skipped queue shows only
// in the moments a ghost waiter keeps a free lock: that mutant may take
// a minute of rounds.
func TestCheckerCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the checker on each mutant")
	}
	for _, tc := range []struct {
		name   string
		seed   uint64 // the seed that caught it in docs/SAFETY.md
		budget time.Duration
		want   []string
		wrap   func(*memory.Engine) engine.Engine
	}{
		// The defects of issue 23, put back.
		{"cross-kind grant", 674156652518316756, 30 * time.Second, []string{"exclusion:", "kinds:", "differential:"}, func(m *memory.Engine) engine.Engine { return crossKind{m} }},
		{"tokens backwards", 5333937543543745890, 30 * time.Second, []string{"tokens:"}, func(m *memory.Engine) engine.Engine { return &backwards{Engine: m} }},
		{"lease past deadline", 3055048744634355457, 30 * time.Second, []string{"refused while free", "view:", "differential:"}, func(m *memory.Engine) engine.Engine { return lingering{m} }},
		{"skips the queue", 1406928578269760837, time.Minute, []string{"queue:"}, func(m *memory.Engine) engine.Engine {
			return &queueSkipper{Engine: m, queued: map[string]map[string]bool{}}
		}},
		// Three more.
		{"weights count 1", 4533365878454182644, 30 * time.Second, []string{"semaphore:", "differential:"}, func(m *memory.Engine) engine.Engine { return lightWeights{m} }},
		{"writer shares", 2660202044666049339, 30 * time.Second, []string{"exclusion:", "differential:"}, func(m *memory.Engine) engine.Engine { return sharingWriter{m} }},
		{"release frees all", 4408479191399535950, 30 * time.Second, []string{"lost early", "view:", "refused while free", "differential:", "kinds:", "exclusion:"}, func(m *memory.Engine) engine.Engine { return releaseAll{m} }},
		{"inspect blind", 1876869466516342429, 30 * time.Second, []string{"view:", "differential:"}, func(m *memory.Engine) engine.Engine { return blindInspect{m} }},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			t.Parallel()
			mem := memory.New()
			t.Cleanup(func() { _ = mem.Close() })
			e := tc.wrap(mem)
			h := Harness{New: func(*testing.T) engine.Engine { return e }}
			cfg := checkConfig{budget: tc.budget, clients: 4, names: 3, ops: 20, shrinkIn: 5 * time.Second}
			if tc.budget > 30*time.Second {
				cfg.clients, cfg.ops = 6, 40 // the long mode's size: more chances
			}
			var err error
			if tc.seed != 0 {
				cfg.seeds = []uint64{tc.seed}
				err = runChecker(t, h, cfg)
				cfg.seeds = nil
			}
			if err == nil {
				err = runChecker(t, h, cfg)
			}
			if err == nil {
				t.Fatalf("the checker passed the %q mutant", tc.name)
			}
			first, _, _ := strings.Cut(err.Error(), "\nshrunk")
			for _, w := range tc.want {
				if strings.Contains(first, w) {
					t.Logf("caught: %s", first)
					return
				}
			}
			t.Fatalf("the checker failed the %q mutant, but not with %q:\n%v", tc.name, tc.want, err)
		})
	}
}

// crossKind grants a mutex beside shared holders (issue 23, item 1).
type crossKind struct{ *memory.Engine }

func (c crossKind) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if info, err := c.InspectShared(ctx, r.Name); err == nil && info.Held {
		return engine.Grant{Acquired: true, Token: info.HighWater + 1, Count: 1}, nil
	}
	return c.Engine.Acquire(ctx, r)
}

// backwards hands every third new grant a token below the ones before
// (issue 23, item 2: a token drawn before the grant won the row).
type backwards struct {
	*memory.Engine
	n atomic.Int64
}

func (b *backwards) lower(g engine.Grant) engine.Grant {
	if g.Acquired && g.Count == 1 && b.n.Add(1)%3 == 0 {
		g.Token -= 1000
	}
	return g
}

func (b *backwards) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := b.Engine.Acquire(ctx, r)
	return b.lower(g), err
}

func (b *backwards) AcquireShared(ctx context.Context, r engine.SharedRequest) (engine.Grant, error) {
	g, err := b.Engine.AcquireShared(ctx, r)
	return b.lower(g), err
}

// lingering keeps every lease three times its ttl: a lease still valid in
// the authority past its deadline (issue 23, item 5).
type lingering struct{ *memory.Engine }

func (l lingering) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	r.TTL *= 3
	return l.Engine.Acquire(ctx, r)
}

func (l lingering) AcquireShared(ctx context.Context, r engine.SharedRequest) (engine.Grant, error) {
	r.TTL *= 3
	return l.Engine.AcquireShared(ctx, r)
}

func (l lingering) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	for i := range rs {
		if !rs[i].Waiter {
			rs[i].TTL *= 3
		}
	}
	return l.Engine.Extend(ctx, rs)
}

// queueSkipper lets a TryAcquire take a free lock that is kept for the
// waiters queued for it: it takes the waiters it saw queued out of the
// queue (they queue again at their next attempt) and grants the newcomer.
type queueSkipper struct {
	*memory.Engine
	mu     sync.Mutex
	queued map[string]map[string]bool // name -> waiter ids seen queued
}

func (q *queueSkipper) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := q.Engine.Acquire(ctx, r)
	if err != nil || g.Acquired || g.Holder != "" {
		return g, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.Waiter != "" {
		if q.queued[r.Name] == nil {
			q.queued[r.Name] = map[string]bool{}
		}
		q.queued[r.Name][r.Waiter] = true
		return g, err
	}
	for w := range q.queued[r.Name] {
		_ = q.Leave(ctx, r.Name, w)
	}
	delete(q.queued, r.Name)
	return q.Engine.Acquire(ctx, r)
}

// lightWeights counts every semaphore request as one permit.
type lightWeights struct{ *memory.Engine }

func (l lightWeights) AcquireShared(ctx context.Context, r engine.SharedRequest) (engine.Grant, error) {
	if r.Kind == engine.Semaphore {
		r.Weight = 1
	}
	return l.Engine.AcquireShared(ctx, r)
}

// sharingWriter takes a reader-writer lock's write side as one permit, so
// that readers share with the writer.
type sharingWriter struct{ *memory.Engine }

func (s sharingWriter) AcquireShared(ctx context.Context, r engine.SharedRequest) (engine.Grant, error) {
	if r.Kind == engine.RWLock && r.Weight == engine.RWPermits {
		r.Weight = 1
	}
	return s.Engine.AcquireShared(ctx, r)
}

// releaseAll frees every holder of a shared lock when one releases.
type releaseAll struct{ *memory.Engine }

func (a releaseAll) ReleaseShared(ctx context.Context, name, owner string) (engine.ReleaseResult, error) {
	res, err := a.Engine.ReleaseShared(ctx, name, owner)
	if err == nil && res.Status == engine.Released {
		_, err = a.ForceRelease(ctx, name)
	}
	return res, err
}

// blindInspect reports every mutex free.
type blindInspect struct{ *memory.Engine }

func (b blindInspect) Inspect(ctx context.Context, name string) (engine.Info, error) {
	info, err := b.Engine.Inspect(ctx, name)
	if info.Kind == 0 {
		info.Held, info.Owner, info.Holders = false, "", nil
	}
	return info, err
}

// TestDifferentialCatchesKindAsContention: the sequential replay tells an
// engine that refuses another kind as contention (the answer of Redis and
// PostgreSQL before issue 23) from the embedded engine, whatever the
// specification makes of it: a sequential schedule has no timing to
// blame.
func TestDifferentialCatchesKindAsContention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := genConfig{clients: 3, names: 2, ops: 30, base: 150 * time.Millisecond, shared: true, semaphores: true, lister: true}
	s := generate(1, g, true)
	mem, ref := memory.New(), memory.New()
	defer func() { _ = mem.Close(); _ = ref.Close() }()
	mutant := kindAsContention{mem}
	got := runSchedule(ctx, s, "diff", func(int) (engine.Engine, func()) { return mutant, nil })
	want := runSchedule(ctx, s, "diff", func(int) (engine.Engine, func()) { return ref, nil })
	if bad := differ(got, want); len(bad) == 0 || !strings.Contains(bad[0], "-> locked") || !strings.Contains(bad[0], "kind-refused") {
		t.Fatalf("the differential comparison found %q, want a contention where the embedded engine refused the kind", bad)
	}
	if bad := differ(want, want); len(bad) != 0 {
		t.Fatalf("a history differs from itself: %q", bad)
	}
}

// kindAsContention answers a request for another kind than the name's as
// contention, not as an argument error.
type kindAsContention struct{ *memory.Engine }

func (k kindAsContention) contention(g engine.Grant, err error) (engine.Grant, error) {
	var ae *engine.ArgumentError
	if errors.As(err, &ae) && strings.Contains(ae.Reason, ", not a ") {
		return engine.Grant{Holder: "someone", HolderTTL: time.Second}, nil
	}
	return g, err
}

func (k kindAsContention) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return k.contention(k.Engine.Acquire(ctx, r))
}

func (k kindAsContention) AcquireShared(ctx context.Context, r engine.SharedRequest) (engine.Grant, error) {
	return k.contention(k.Engine.AcquireShared(ctx, r))
}
