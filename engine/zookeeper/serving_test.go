package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// waitServing waits until the ensemble serves a new session and a write
// (every member answering srvr is not enough: after two members were
// stopped, the quorum was seen re-forming for over a minute past that),
// so that a fault's aftermath does not fail the next test. It fails t
// after d.
func waitServing(t *testing.T, ens *zktest.Ensemble, d time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		err := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			e, err := zkengine.Dial(ctx, ens.Servers(), testSession)
			if err != nil {
				return err
			}
			defer e.Close()
			_, err = distlock.New(e).Inspect(ctx, "serving") // writes the root's data
			return err
		}()
		if err == nil {
			if waited := time.Since(start); waited > 5*time.Second {
				t.Logf("the ensemble served again after %v", waited.Round(time.Millisecond))
			}
			return
		}
		if time.Since(start) > d {
			t.Fatalf("the ensemble does not serve a new session and a write after %v: %v", d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaderOf returns the ensemble's leader, waiting up to 30 s for one to be
// known (srvr answers while members are between modes).
func leaderOf(t *testing.T, ens *zktest.Ensemble) *zktest.Member {
	t.Helper()
	var leader *zktest.Member
	waitUntil(t, 30*time.Second, "a leader", func() bool {
		leader = ens.Leader()
		return leader != nil
	})
	return leader
}
