package enginetest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
)

// TestChecksFailOnMutants shows that the suite's rewritten checks still
// fail when the property is broken: each mutant (an embedded engine broken
// in one way) runs one check in a child process, which must fail with the
// check's words.
func TestChecksFailOnMutants(t *testing.T) {
	if m := os.Getenv("ENGINETEST_MUTANT"); m != "" {
		runMutant(t, m)
		return
	}
	if testing.Short() {
		t.Skip("runs the suite's checks in child processes")
	}
	for _, tc := range []struct {
		mutant, check, want string
	}{
		// Subscriptions that never fire: the waiter gets the lock only by
		// its heartbeat's word, with no wake-up after the release.
		{"deaf", "Handoff", "followed no wake-up"},
		// A renewal after the deletion answered extended (a stale read):
		// the holder is told a renewal later than it must be.
		{"stale", "LossOnDelete", "answered extended"},
		// Renewals answered "not held": the watchdog cannot keep a lease.
		{"forgetful", "WatchdogKeepsLease", "lease lost during work"},
		// A declared limit compared with the stored one (the rule before
		// issue 24): a waiter of a client not redeployed after a SetLimit
		// failed, and so did the client.
		{"oldlimit", "SemaphoreWaiterSurvivesSetLimit", "the waiter declaring limit 2"},
		{"oldlimit", "SemaphoreLimitStored", "under a declared limit 5"},
		// Weight 0 taken as 1 (WithWeight(0) took a permit).
		{"weightone", "SemaphoreWeightZero", "Acquire with weight 0"},
		// Bad kind fields mended instead of refused (an engine that skips
		// engine.CheckKind and makes do with what it got).
		{"lenient", "BadKindInput", "want an *engine.ArgumentError"},
		// Re-entry counted outside the engine, which holds once: a short
		// re-entry sets the expiry of the long hold (the defect of every
		// engine before engine.HoldExpiry).
		{"oneHold", "ReentryExpiry/mutex/ShortReentry", "before the lease's deadline"},
		// A force-released holder's renewal answered missing (no taken-over
		// mark): the holder is told its lease expired.
		{"untold", "ForceReleaseWakesWaiter", `lost its lease as "expired"`},
		// A force-release of one holder that frees every holder.
		{"greedy", "ForceReleaseHolder", "after freeing one reader"},
	} {
		t.Run(tc.mutant+"/"+tc.check, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChecksFailOnMutants$/^"+tc.check+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "ENGINETEST_MUTANT="+tc.mutant)
			out, err := cmd.CombinedOutput()
			if err == nil || !bytes.Contains(out, []byte(tc.want)) {
				t.Fatalf("%s on the %s mutant: %v, want a failure saying %q:\n%s", tc.check, tc.mutant, err, tc.want, out)
			}
		})
	}
}

// runMutant runs the suite on the named mutant of the embedded engine (the
// parent picks the check with -test.run).
func runMutant(t *testing.T, mutant string) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	var e engine.Engine
	switch mutant {
	case "deaf":
		e = deaf{mem}
	case "stale":
		e = &stale{Engine: mem, answered: map[string]bool{}}
	case "forgetful":
		e = forgetful{mem}
	case "oldlimit":
		e = oldLimit{mem}
	case "weightone":
		e = weightOne{mem}
	case "lenient":
		e = lenient{mem}
	case "oneHold":
		e = &oneHold{Engine: mem, holds: map[[2]string]int{}}
	case "untold":
		e = untold{mem}
	case "greedy":
		e = greedy{mem}
	default:
		t.Fatalf("no mutant %q", mutant)
	}
	// No Harness.Delete: the suite deletes by force-release.
	enginetest.Run(t, enginetest.Harness{New: func(t *testing.T) engine.Engine { return e }})
}

// deaf is the embedded engine with subscriptions that never fire.
type deaf struct{ *memory.Engine }

func (d deaf) Subscribe(context.Context, string) (engine.Subscription, error) {
	return silent{make(chan struct{})}, nil
}

func (d deaf) SubscribeWaiter(context.Context, string, string) (engine.Subscription, error) {
	return silent{make(chan struct{})}, nil
}

// silent is a subscription that never fires.
type silent struct{ c chan struct{} }

func (s silent) C() <-chan struct{} { return s.c }
func (s silent) Close()             {}

// stale is the embedded engine answering the first renewal of a lock that
// is gone (or was taken from its holder) as extended.
type stale struct {
	*memory.Engine
	mu       sync.Mutex
	answered map[string]bool
}

func (s *stale) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	res, err := s.Engine.Extend(ctx, rs)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range res {
		if res[i].Err == nil && res[i].Status != engine.Extended && !rs[i].Waiter && !s.answered[rs[i].Name] {
			s.answered[rs[i].Name] = true
			res[i].Status = engine.Extended
		}
	}
	return res, err
}

// forgetful is the embedded engine answering every renewal "not held".
type forgetful struct{ *memory.Engine }

func (f forgetful) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	res, err := f.Engine.Extend(ctx, rs)
	for i := range res {
		if !rs[i].Waiter {
			res[i] = engine.ExtendResult{Status: engine.Missing}
		}
	}
	return res, err
}

// oldLimit is the embedded engine refusing a semaphore request whose
// declared limit is not the stored one.
type oldLimit struct{ *memory.Engine }

func (o oldLimit) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if info, err := o.Inspect(ctx, r.Name); err == nil && r.Kind == engine.Semaphore && info.Kind == engine.Semaphore && info.Limit != r.Limit {
		return engine.Grant{}, &engine.ArgumentError{Arg: "limit", Reason: fmt.Sprintf("the semaphore %q has limit %d, not %d", r.Name, info.Limit, r.Limit)}
	}
	return o.Engine.Acquire(ctx, r)
}

// weightOne is the embedded engine taking a request for 0 permits as one
// for 1.
type weightOne struct{ *memory.Engine }

func (w weightOne) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Kind.Shared() {
		r.Weight = max(r.Weight, 1)
	}
	return w.Engine.Acquire(ctx, r)
}

// lenient is the embedded engine mending the kind fields engine.CheckKind
// refuses: an unknown kind taken as a semaphore, a mutex's limit and
// weight dropped, a limit or weight out of range moved into it.
type lenient struct{ *memory.Engine }

func (l lenient) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if engine.CheckKind(&r) != nil {
		switch {
		case r.Kind > engine.RWLock:
			r.Kind = engine.Semaphore
		case r.Kind == engine.Mutex:
			r.Limit, r.Weight = 0, 0
		case r.Kind == engine.RWLock:
			r.Limit, r.Weight = engine.RWPermits, 1
		}
		if r.Kind == engine.Semaphore {
			r.Limit = min(max(r.Limit, 1), engine.RWPermits-1)
			r.Weight = min(max(r.Weight, 1), r.Limit)
		}
	}
	return l.Engine.Acquire(ctx, r)
}

// oneHold is the embedded engine with a mutex's re-entry counted outside
// it: the engine keeps one hold per owner, and a re-entry extends it to
// the re-entry's ttl, shorter ones too.
type oneHold struct {
	*memory.Engine
	mu    sync.Mutex
	holds map[[2]string]int
}

func (o *oneHold) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := [2]string{r.Name, r.Owner}
	if n := o.holds[k]; n > 0 {
		res, err := o.Engine.Extend(ctx, []engine.ExtendRequest{{Name: r.Name, Owner: r.Owner, TTL: r.TTL}})
		if err != nil {
			return engine.Grant{}, err
		}
		if res[0].Status == engine.Extended {
			o.holds[k] = n + 1
			return engine.Grant{Acquired: true, Token: res[0].Token, Count: n + 1}, nil
		}
		delete(o.holds, k)
	}
	g, err := o.Engine.Acquire(ctx, r)
	if err == nil && g.Acquired {
		o.holds[k] = 1
	}
	return g, err
}

func (o *oneHold) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := [2]string{r.Name, r.Owner}
	if n := o.holds[k]; n > 1 {
		o.holds[k] = n - 1
		return engine.ReleaseResult{Status: engine.Released, Remaining: n - 1}, nil
	}
	delete(o.holds, k)
	return o.Engine.Release(ctx, r)
}

// ReleaseOnce is the mutant's Release (the embedded engine's own is
// promoted otherwise).
func (o *oneHold) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, _ string) (engine.ReleaseResult, error) {
	return o.Release(ctx, r)
}

// untold is the embedded engine answering a renewal that was answered
// taken over (HeldByOther) while the lock is free as missing: a
// force-release that leaves its holder no mark.
type untold struct{ *memory.Engine }

func (u untold) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	res, err := u.Engine.Extend(ctx, rs)
	for i := range res {
		if res[i].Status != engine.HeldByOther || rs[i].Waiter {
			continue
		}
		if info, ierr := u.Engine.Inspect(ctx, rs[i].Name); ierr == nil && !info.Held && !rs[i].Kind.Shared() {
			res[i].Status = engine.Missing
		}
	}
	return res, err
}

// greedy is the embedded engine whose force-release of one holder frees
// every holder.
type greedy struct{ *memory.Engine }

func (g greedy) ForceReleaseHolder(ctx context.Context, name, _ string) (bool, error) {
	return g.Engine.ForceRelease(ctx, name)
}
