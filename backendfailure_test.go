package distlock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/servertest"
	"github.com/distlock/distlock/internal/waiting"
	"github.com/distlock/distlock/server"
)

// The tests of this file wait on backends that cannot work (issue 24): a
// wait must end with the backend's typed error, at once when no retry can
// mend it, else once the attempts have failed for the Client's backend
// failure budget, never only when its context ends.

// testBudget is the failure budget of these tests: small, so that a wait
// that honours it ends soon. testGuard only keeps a wait that never ends
// from hanging the test; it asserts no speed.
const (
	testBudget = 300 * time.Millisecond
	testGuard  = time.Minute
)

// deadEngines returns engines whose backend is a closed loopback port: a
// Redis engine and a distlock server's.
func deadEngines(t *testing.T) map[string]engine.Engine {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: servertest.ClosedAddr(t), ContextTimeoutEnabled: true, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	reng, err := redisengine.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reng.Close() })
	seng, err := remote.New("http://" + servertest.ClosedAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seng.Close() })
	return map[string]engine.Engine{"redis": reng, "server": seng}
}

// acquireGuarded runs acquire in a goroutine and returns its error, failing
// the test when it has not returned after testGuard.
func acquireGuarded(t *testing.T, what string, acquire func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- acquire() }()
	select {
	case err := <-done:
		return err
	case <-time.After(testGuard):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

// TestAcquireDeadBackendEndsWithinFailureBudget: Acquire with
// context.Background() on a backend where nothing listens returns the
// backend's *BackendError once its attempts have failed for the failure
// budget; the error is not a context's. (Before issue 24 it retried
// forever.)
func TestAcquireDeadBackendEndsWithinFailureBudget(t *testing.T) {
	for name, eng := range deadEngines(t) {
		t.Run(name, func(t *testing.T) {
			c := distlock.New(eng, distlock.WithBackendFailureBudget(testBudget))
			defer c.Close()
			err := acquireGuarded(t, "Acquire(context.Background()) on a dead backend", func() error {
				l, err := c.Acquire(context.Background(), "dead")
				if l != nil {
					t.Error("granted on a dead backend")
				}
				return err
			})
			var be *distlock.BackendError
			if !errors.As(err, &be) || !errors.Is(err, distlock.ErrBackend) {
				t.Fatalf("Acquire = %v, want a *BackendError", err)
			}
			if be.Failing < testBudget {
				t.Errorf("gave up after failing for %v, before the budget %v: %v", be.Failing, testBudget, err)
			}
			var we *distlock.WaitError
			if errors.As(err, &we) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("the error claims a context ended: %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

// TestAcquireDeadBackendKeepsContextDeadline: a wait whose context ends
// before the failure budget ends with a *WaitError that matches the
// context's error and the last attempt's ErrBackend: the budget never
// lengthens a wait. The overrun past the deadline is logged (docs: a round
// trip, cut off by the deadline, plus leaving the queue).
func TestAcquireDeadBackendKeepsContextDeadline(t *testing.T) {
	for name, eng := range deadEngines(t) {
		t.Run(name, func(t *testing.T) {
			c := distlock.New(eng) // the default budget, far beyond the deadline
			defer c.Close()
			const wait = 500 * time.Millisecond
			start := time.Now()
			err := acquireGuarded(t, "Acquire with a deadline on a dead backend", func() error {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_, err := c.Acquire(ctx, "dead")
				return err
			})
			var we *distlock.WaitError
			if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, distlock.ErrBackend) {
				t.Fatalf("Acquire = %v, want a *WaitError matching DeadlineExceeded and ErrBackend", err)
			}
			t.Logf("returned %v after the deadline", time.Since(start)-wait)
		})
	}
}

// TestAcquireRefusedTokenEndsAtOnce: a token the server refuses (the read
// role, which may not take locks) ends Acquire, Semaphore.Acquire,
// RWMutex.Lock and Campaign with context.Background() at once, with a
// *BackendError that matches remote.ErrForbidden, without waiting out the
// failure budget (Failing is zero).
func TestAcquireRefusedTokenEndsAtOnce(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	toks := server.NewTokens()
	const read = "read-0123456789abcdef"
	if err := toks.Add(server.RoleRead, read); err != nil {
		t.Fatal(err)
	}
	_, url := servertest.Start(t, mem, true, server.WithTokens(toks),
		server.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	eng, err := remote.New(url, remote.WithToken(read))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	calls := map[string]func() error{
		"Acquire":           func() error { _, err := c.Acquire(ctx, "m"); return err },
		"Semaphore.Acquire": func() error { _, err := c.Semaphore("s", 2).Acquire(ctx); return err },
		"RWMutex.Lock":      func() error { _, err := c.RWMutex("rw").Lock(ctx); return err },
		"Campaign":          func() error { _, err := c.Campaign(ctx, "e", "v"); return err },
	}
	for name, call := range calls {
		err := acquireGuarded(t, name, call)
		var be *distlock.BackendError
		if !errors.As(err, &be) || !errors.Is(err, remote.ErrForbidden) {
			t.Errorf("%s = %v, want a *BackendError matching remote.ErrForbidden", name, err)
			continue
		}
		if be.Failing != 0 {
			t.Errorf("%s: waited out a failure budget (%v) for an error no retry mends: %v", name, be.Failing, err)
		}
	}
}

// TestAcquireStalledRedisKeepsDeadline: a queued waiter whose Redis stops
// answering (SIGSTOP) returns a *WaitError for its context's deadline: the
// attempt in flight is cut off by the deadline, and leaving the queue
// afterwards is bounded by waiting.LeaveTimeout, not by the Client's
// release timeout (20s here; before issue 24 the wait overran its deadline
// by 5 to 10s). The test allows 4 LeaveTimeouts of overrun plus the
// slack of the scheduling delay it measures (enginetest.Bounded: beyond
// that, on a machine measured as slow as a LeaveTimeout, it skips as too
// slow to judge); a wait bounded by the release timeout overruns by 20s
// and fails. The overrun is logged.
func TestAcquireStalledRedisKeepsDeadline(t *testing.T) {
	srv := redistest.Start(t)
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	const releaseTimeout = 20 * time.Second
	c := distlock.New(eng, distlock.WithReleaseTimeout(releaseTimeout))
	defer c.Close()
	ctx := context.Background()
	held, err := c.Acquire(ctx, "stalled", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	probe := enginetest.StartProbe(t)
	const wait = time.Second
	done := make(chan error, 1)
	var start time.Time
	go func() {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		start = time.Now()
		_, err := c.Acquire(wctx, "stalled")
		done <- err
	}()
	for {
		info, err := eng.Inspect(ctx, "stalled")
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Acquire returned before it queued: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Resume() }()
	select {
	case err = <-done:
	case <-time.After(testGuard):
		t.Fatal("Acquire on a stalled Redis did not return")
	}
	returned := time.Since(start)
	_ = srv.Resume()
	var we *distlock.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want a *WaitError matching DeadlineExceeded", err)
	}
	enginetest.Bounded(t, "the return after the deadline (leaving the queue, bounded by LeaveTimeout)",
		returned-wait, 4*waiting.LeaveTimeout+probe.Slack(), probe.Delay(), waiting.LeaveTimeout)
	t.Logf("returned %v after the deadline", returned-wait)
}
