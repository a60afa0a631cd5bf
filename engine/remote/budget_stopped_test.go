package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/remote"
)

// TestStrangerFailureBudgetOnStoppedServer: a wait whose server stops
// answering (SIGSTOP: the connections stay open, nothing is refused) ends
// with the *BackendError of WithBackendFailureBudget once the backend has
// failed for the budget, whatever is left of the wait's context, as the
// option promises ("an attempt that gets no answer within what is left of
// d is cut off and counts as failed"):
//   - queued: the waiter is queued behind a holder whose lease outlasts the
//     test, and sleeps until a wake-up, when the server stops;
//   - starting: the wait starts while the server is stopped (a campaign
//     again after a loss the stop caused).
//
// Bounded by the budget, plus one heartbeat interval of the waiter (the
// failure counts from the send time of the first of its calls that meets
// the stopped server), plus the second a request that changes state may
// take to be answered after its context ended (the engine's settle
// grace), plus the scheduling slack; before, the queued waiter slept until
// a wake-up (here, until its context ended).
func TestStrangerFailureBudgetOnStoppedServer(t *testing.T) {
	// Above the waiter's heartbeat deadline (distlock.WaiterTTL) and the
	// remote engine's settle grace, within which a heartbeat that met the
	// stopped server is known to have failed.
	const budget = 5 * time.Second
	for _, tc := range []string{"queued", "starting"} {
		t.Run(tc, func(t *testing.T) {
			srvs, _, _ := procServers(t, 1)
			s := srvs[0]
			holder := strangerClient(t, s.URL())
			e, err := remote.New(s.URL())
			if err != nil {
				t.Fatal(err)
			}
			waiter := distlock.New(e, distlock.WithBackendFailureBudget(budget))
			t.Cleanup(func() { _ = waiter.Close(); _ = e.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			l, err := holder.Acquire(ctx, "b", distlock.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			wait := func() {
				_, err := waiter.Acquire(ctx, "b", distlock.WithTTL(30*time.Second))
				ended <- err
			}
			probe := enginetest.StartProbe(t)
			var cont func()
			var stopped time.Time
			if tc == "queued" {
				go wait()
				enginetest.WaitFor(t, 20*time.Second, "the waiter to queue", func() bool {
					info, err := holder.Inspect(ctx, "b")
					return err == nil && info.Waiters == 1
				})
				cont, stopped = s.pause(), time.Now()
			} else {
				cont, stopped = s.pause(), time.Now()
				go wait()
			}
			var werr error
			select {
			case werr = <-ended:
			case <-time.After(40 * time.Second):
				cont()
				t.Fatal("the wait did not end 40 s after its server stopped")
			}
			took := time.Since(stopped)
			cont()
			var be *distlock.BackendError
			if !errors.As(werr, &be) || be.Failing < budget {
				t.Fatalf("Acquire: %v, want the *BackendError of a budget of %v used up", werr, budget)
			}
			t.Logf("ended %v after the stop: %v", took, werr)
			enginetest.Bounded(t, "the wait's end after its server stopped", took, budget+distlock.WaiterTTL/3+time.Second+probe.Slack(), probe.Delay(), time.Second)
			_ = l.Release(ctx)
		})
	}
}
