package zookeeper_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// TestFaults injects member faults into the shared ensemble of three, one
// fault at a time, each bounded, with the ensemble whole again after each.
// It is not parallel: TestConformance (which runs before it, as tests that
// are not parallel do) has finished with the ensemble, and no other test
// uses it.
func TestFaults(t *testing.T) {
	ens := shared(t, 3)
	t.Run("LeaderKilledUnderHeldLock", func(t *testing.T) { leaderKilled(t, ens) })
	t.Run("MinorityStopped", func(t *testing.T) { minorityStopped(t, ens) })
	t.Run("RollingRestart", func(t *testing.T) { rollingRestart(t, ens) })
	t.Run("SharedLeaderKilled", func(t *testing.T) { sharedLeaderKilled(t, ens) })
	t.Run("StaleRefusal", func(t *testing.T) { staleRefusal(t, ens) })
	t.Run("StaleKindRecord", func(t *testing.T) { staleKindRecord(t, ens) })
	t.Run("StaleLeave", func(t *testing.T) { staleLeave(t, ens) })
	t.Run("MajorityStopped", func(t *testing.T) { majorityStopped(t, ens) })
}

// leaderKilled: the leader is killed while a lock is held and two
// waiters wait. The lock is never held twice at once, every grant's token
// is above the one before, and both waiters get the lock in the end.
func leaderKilled(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := "leader-killed"
	holder := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = holder.Close() })
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		inside = 1 // the holder
		tokens = []uint64{h.Token()}
		wg     sync.WaitGroup
	)
	enter := func(token uint64) {
		mu.Lock()
		defer mu.Unlock()
		inside++
		if inside > 1 {
			t.Errorf("two holders at once (token %d)", token)
		}
		tokens = append(tokens, token)
	}
	leave := func() { mu.Lock(); inside--; mu.Unlock() }
	for range 2 {
		c := distlock.New(dial(t, ens.Servers()))
		t.Cleanup(func() { _ = c.Close() })
		wg.Go(func() {
			l, err := c.Acquire(ctx, name, distlock.WithTTL(10*time.Second))
			if err != nil {
				t.Errorf("a waiter: %v", err)
				return
			}
			enter(l.Token())
			leave()
			_ = l.Release(ctx)
		})
	}
	waitUntil(t, 20*time.Second, "both waiters to queue", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 2
	})
	leader := ens.Leader()
	if leader == nil {
		t.Fatal("no leader")
	}
	leader.Kill()
	t.Cleanup(func() { leader.Restart(); ens.WaitReady(60 * time.Second) })
	ens.WaitReady(30 * time.Second)
	// The holder goes on or is told it lost the lock; either way it leaves.
	leave()
	if err := h.Release(ctx); err != nil && !errors.Is(err, distlock.ErrLeaseLost) && !errors.Is(err, distlock.ErrNotHeld) {
		t.Logf("holder's release after the failover: %v", err)
	}
	wg.Wait()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens %v do not increase", tokens)
		}
	}
	if len(tokens) != 3 {
		t.Fatalf("grants %v, want the holder's and both waiters'", tokens)
	}
}

// majorityStopped: with two of three members paused (SIGSTOP), a lock
// held before is told lost, and no call is told "granted" or "locked":
// every attempt ends with an error.
func majorityStopped(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := "majority-stopped"
	c := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = c.Close() })
	h, err := c.Acquire(ctx, name, distlock.WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// A client of the member left running, connected before the fault.
	other := distlock.New(dial(t, ens.Servers()[2:]))
	t.Cleanup(func() { _ = other.Close() })
	stopped := ens.Members[:2]
	for _, m := range stopped {
		m.Stop()
	}
	t.Cleanup(func() {
		for _, m := range stopped {
			m.Cont()
		}
		ens.WaitReady(60 * time.Second)
		waitServing(t, ens, 2*time.Minute) // the 3-member checker and latch come next
	})
	select {
	case <-h.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told within 20s that its lease cannot be proven")
	}
	for _, try := range []func(context.Context) (*distlock.Lease, error){
		func(ctx context.Context) (*distlock.Lease, error) { return other.TryAcquire(ctx, name) },
		func(ctx context.Context) (*distlock.Lease, error) { return other.Acquire(ctx, name) },
	} {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		l, err := try(actx)
		acancel()
		if err == nil {
			_ = l.Release(ctx)
			t.Fatal("granted without a quorum")
		}
		var le *distlock.LockedError
		if errors.As(err, &le) {
			t.Fatalf("told locked without a quorum: %v", err)
		}
	}
}
