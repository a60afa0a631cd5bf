package enginetest_test

import (
	"bytes"
	"context"
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
		// A force-released holder's renewal answered missing (no taken-over
		// mark): the holder is told its lease expired.
		{"untold", "ForceReleaseWakesWaiter", `lost its lease as "expired"`},
		// A force-release of one holder that frees every holder.
		{"greedy", "ForceReleaseHolder", "after freeing one reader"},
	} {
		t.Run(tc.mutant, func(t *testing.T) {
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
		if info, ierr := u.Engine.Inspect(ctx, rs[i].Name); ierr == nil && !info.Held && !rs[i].Shared {
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
