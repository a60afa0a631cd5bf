// Package enginetest is the conformance suite every distlock engine must
// pass. It drives an engine through the public distlock.Client, so that the
// semantics users see cannot drift between engines.
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, enginetest.Harness{New: func(t *testing.T) engine.Engine { ... }})
//	}
package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// Harness tells the suite how to reach one backend.
type Harness struct {
	// New returns an engine on the backend under test. Engines returned
	// within one test must share one lock authority (like two processes on
	// one Redis). The harness closes them (t.Cleanup).
	New func(t *testing.T) engine.Engine

	// Delete removes the lock name behind the library's back, as an
	// operator or an expiry on the server would. Nil: engines that
	// implement engine.ForceReleaser are used instead.
	Delete func(t *testing.T, name string)

	// Register returns a shared integer register that is NOT atomic under
	// concurrent read-modify-write (a Redis key read with GET and written
	// with SET). Nil: an in-process register that yields between read and
	// write.
	Register func(t *testing.T, name string) Register

	// Faulty, when set, returns an engine on the backend whose connection
	// can lose a reply: drop makes it lose the next one (the command ran;
	// the client never learns its outcome, and its library may send it
	// again). The randomized checker (Check) gives each Client such an
	// engine and drops replies at random. Nil: no reply is lost.
	Faulty func(t *testing.T) (e engine.Engine, drop func())

	// Faults, when set, are the backend faults the randomized checker
	// injects into its concurrent histories, between and inside
	// operations. Nil: none.
	Faults *Faults

	// Votes: the engine decides a grant by a vote among nodes (a Redlock
	// quorum), so attempts on one name that overlap can each win fewer
	// than a majority and all be refused: a split vote. The randomized
	// checker then does not require a refused attempt to have been
	// granted while another attempt on its name was in flight.
	Votes bool

	// MajorityValues: the engine's reading of a held lock's metadata is
	// what most of its nodes hold (a Redlock quorum): while a change is on
	// its way to a majority, two readings may report its old and new
	// values in either order, so an observer may report an election's
	// value of one term after a newer one. ElectionObserveForward is
	// skipped.
	MajorityValues bool

	// UncheckedTokens: the engine does not check the grant token of a
	// renewal or a release (engine.ExtendRequest.Token): a Redlock quorum,
	// whose nodes keep tokens of their own. GrantTokenChecked and
	// ElectionDeposedSameOwner are skipped.
	UncheckedTokens bool
}

// Register is a shared integer with separate reads and writes.
type Register interface {
	Get(ctx context.Context) (int64, error)
	Set(ctx context.Context, v int64) error
}

// Run runs the conformance suite.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"MutualExclusion", s.mutualExclusion},
		{"UnlockedControlLosesUpdates", s.unlockedControl},
		{"TokensIncrease", s.tokensIncrease},
		{"TryAcquireLocked", s.tryAcquireLocked},
		{"ReleaseIdempotent", s.releaseIdempotent},
		{"Reentrancy", s.reentrancy},
		{"ReentryExpiry", s.reentryExpiry},
		{"Attach", s.attach},
		{"Inspect", s.inspect},
		{"WatchdogKeepsLease", s.watchdogKeeps},
		{"NoRenewControlLoses", s.noRenewLoses},
		{"LossOnDelete", s.lossOnDelete},
		{"Handoff", s.handoff},
		{"ExpiryWakesWaiter", s.expiryWakesWaiter},
		{"WaiterCancelled", s.waiterCancelled},
		{"BadInput", s.badInput},
		{"BadKindInput", s.badKindInput},
		{"Do", s.do},
		{"DoLoss", s.doLoss},
		{"CloseReleases", s.closeReleases},
		{"CloseWakesWaiters", s.closeWakesWaiters},
		{"ForceReleaseWakesWaiter", s.forceRelease},
		{"QueueFairOrder", s.fairOrder},
		{"QueueOnlyHeadWoken", s.onlyHeadWoken},
		{"QueueDeadWaiterSkipped", s.deadWaiterSkipped},
		{"QueueGiveUpLeaves", s.giveUpLeaves},
		{"QueueReservationLapses", s.reservationLapses},
		{"QueueReservationPassesOnLeave", s.reservationPassesOnLeave},
		{"QueueLeaveBehindExpired", s.leaveBehindExpired},
		{"QueueLeaveThroughAnotherEngine", s.leaveThroughAnotherEngine},
		{"QueueLeftWaiterStillWaits", s.leftWaiterStillWaits},
		{"QueueReservationPassesOnExpiry", s.reservationPassesOnExpiry},
		{"QueueFairNewcomerQueues", s.fairNewcomerQueues},
		{"QueueUnsupported", s.queueUnsupported},
		{"QueueListed", s.queueListed},
		{"RaiseFenceHolder", s.raiseFenceHolder},
		{"RaiseFenceNotHolder", s.raiseFenceNotHolder},
		{"RaiseFenceNeverLowers", s.raiseFenceNeverLowers},
		{"RaiseFenceNextGrant", s.raiseFenceNextGrant},
		{"ReleaseOnceReplay", s.releaseOnceReplay},
		{"ReleaseOnceReplayShared", s.releaseOnceReplayShared},
		{"ReleaseOnceAfterOthers", s.releaseOnceAfterOthers},
		{"AttemptReplay", s.attemptReplay},
		{"AttemptReplayOneOff", s.attemptReplayOneOff},
		{"WaitingWakesSubscriber", s.waitingWakesSubscriber},
		{"ElectionHandover", s.electionHandover},
		{"ElectionProclaim", s.electionProclaim},
		{"ElectionExpiry", s.electionExpiry},
		{"ElectionWaitersCount", s.electionWaitersCount},
		{"ElectionCampaignAgain", s.electionCampaignAgain},
		{"ElectionObserveForward", s.electionObserveForward},
		{"ElectionDeposedSameOwner", s.electionDeposedSameOwner},
		{"SemaphoreLimit", s.semaphoreLimit},
		{"SemaphoreExpiry", s.semaphoreExpiry},
		{"SemaphoreFIFO", s.semaphoreFIFO},
		{"SemaphoreLimitStored", s.semaphoreLimitStored},
		{"SemaphoreWaiterSurvivesSetLimit", s.semaphoreWaiterSurvivesSetLimit},
		{"SemaphoreShrinkUnderWaiter", s.semaphoreShrinkUnderWaiter},
		{"MixedKindsLikeMemory", s.mixedKindsLikeMemory},
		{"ReleaseOfAnotherKind", s.releaseOfAnotherKind},
		{"KindsRace", s.kindsRace},
		{"SemaphoreWeightZero", s.semaphoreWeightZero},
		{"SemaphoreSetLimitUnsupported", s.semaphoreSetLimitUnsupported},
		{"RWReadersShare", s.rwReadersShare},
		{"RWNoWriterStarvation", s.rwNoWriterStarvation},
		{"RWUpgradeRefused", s.rwUpgradeRefused},
		{"RWDeadReaderExpires", s.rwDeadReaderExpires},
		{"KindsRefused", s.kindsRefused},
		{"KindQueueBinds", s.kindQueueBinds},
		{"AdminKinds", s.adminKinds},
		{"ListMutexBesideSharedWaiter", s.listMutexBesideSharedWaiter},
		{"ForceReleaseHolder", s.forceReleaseHolder},
		{"ForceReleaseTellsEveryHold", s.forceReleaseTellsEveryHold},
		{"ReleaseAfterExpiry", s.releaseAfterExpiry},
		{"GrantTokenChecked", s.grantTokenChecked},
		{"SetAllOrNothing", s.setAllOrNothing},
		{"SetReleaseGrantToken", s.setReleaseGrantToken},
		{"SetOwnerHoldsName", s.setOwnerHoldsName},
		{"SetKindRefusalNamesName", s.setKindRefusalNamesName},
		{"SetKindBeforeContention", s.setKindBeforeContention},
		{"SetGivesUpClean", s.setGivesUpClean},
		{"SetLoss", s.setLoss},
		{"SetCycles", s.setCycles},
		{"SetKilledHolder", s.setKilledHolder},
		{"SetNotStarved", s.setNotStarved},
		{"SharedWaiterGivesUp", s.sharedWaiterGivesUp},
		{"ListUnderChurn", s.listUnderChurn},
		{"RefusalsStoreNothing", s.refusalsStoreNothing},
		{"AdminElectionAndLatch", s.adminElectionAndLatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type suite struct{ h Harness }

// client returns a new Client on a new engine of the backend.
func (s *suite) client(t *testing.T, opts ...distlock.ClientOption) *distlock.Client {
	t.Helper()
	c := distlock.New(s.h.New(t), opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockName returns a name unique to this test run.
func lockName(t *testing.T) string {
	return fmt.Sprintf("%s-%x", t.Name(), rand.Uint64())
}

func (s *suite) delete(t *testing.T, c *distlock.Client, name string) {
	t.Helper()
	if s.h.Delete != nil {
		s.h.Delete(t, name)
		return
	}
	if _, err := c.ForceRelease(context.Background(), name); err != nil {
		t.Fatalf("force-release: %v", err)
	}
}

func (s *suite) register(t *testing.T, name string) Register {
	if s.h.Register != nil {
		return s.h.Register(t, name)
	}
	return &memRegister{}
}

// memRegister is a deliberately racy register: a read and a write with a
// yield between, guarded only by the lock under test.
type memRegister struct{ v atomic.Int64 }

func (r *memRegister) Get(context.Context) (int64, error) {
	v := r.v.Load()
	time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
	return v, nil
}

func (r *memRegister) Set(_ context.Context, v int64) error { r.v.Store(v); return nil }

// WaitFor polls cond (test-side only) every millisecond until it holds,
// failing t after d: a bound for a starved machine, not a speed. The
// engines' own tests wait with it too.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
