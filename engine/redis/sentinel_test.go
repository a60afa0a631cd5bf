package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/fence"
	"github.com/distlock/distlock/internal/redistest"
)

// TestSentinelFailoverTokenOrder: a master, one replica and three
// redis-sentinel processes; clients reach the master through go-redis
// NewFailoverClient. The replica is cut off (paused, its link dropped) while
// the master hands out more grants, the last one to a holder that keeps the
// lock (the stale holder); then the master is SIGKILLed and Sentinel fails
// over to the replica, which never received those grants. The next grant,
// through a new failover client, comes at once (the failover lost the stale
// holder's grant: two holders, inherent to asynchronous replication). By
// default (the time floor) its token is above every token handed out before,
// and a fence.Guard accepts the new holder's write and refuses the stale
// holder's late one. The control, WithoutTimeFloor, shows the bug: the
// promoted replica counts up from its stale high-water, the new token is
// below the stale holder's, and the guard refuses the new holder and accepts
// the stale one.
func TestSentinelFailoverTokenOrder(t *testing.T) {
	for _, floor := range []bool{true, false} {
		t.Run(map[bool]string{true: "time floor", false: "control: WithoutTimeFloor"}[floor], func(t *testing.T) {
			var opts []redisengine.Option
			if !floor {
				opts = append(opts, redisengine.WithoutTimeFloor())
			}
			g := redistest.StartSentinel(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var guard fence.Guard
			const name, resource = "job", "res"
			acquire := func(e *redisengine.Engine, owner string) uint64 {
				t.Helper()
				gr, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute})
				if err != nil || !gr.Acquired {
					t.Fatalf("grant to %s: %+v, %v", owner, gr, err)
				}
				return gr.Token
			}
			// holder takes the lock, writes through the guard, releases.
			var highest uint64
			holder := func(e *redisengine.Engine, owner string) {
				t.Helper()
				token := acquire(e, owner)
				if token <= highest {
					t.Fatalf("%s: token %d not above %d before a failover", owner, token, highest)
				}
				highest = token
				if err := guard.Check(resource, token, owner); err != nil {
					t.Fatalf("%s's write: %v", owner, err)
				}
				if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err != nil {
					t.Fatal(err)
				}
			}
			old := listEngine(t, g.Client(), opts...)
			for i := range 5 {
				holder(old, fmt.Sprintf("early-%d", i))
			}
			fenceKey := redisengine.DefaultPrefix + "{" + name + "}:fence"
			waitFor(t, "the replica's copy of the high-water", func() bool {
				return g.Replica.Client().Get(ctx, fenceKey).Val() == g.Master.Client().Get(ctx, fenceKey).Val()
			})
			if err := g.CutReplica(ctx); err != nil {
				t.Fatal(err)
			}
			// Grants the replica never receives.
			for i := range 20 {
				holder(old, fmt.Sprintf("lost-%d", i))
			}
			stale := acquire(old, "stale")
			if stale <= highest {
				t.Fatalf("stale holder's token %d not above %d", stale, highest)
			}
			if err := guard.Check(resource, stale, "stale"); err != nil {
				t.Fatalf("the stale holder's write while it held the lock: %v", err)
			}
			if err := g.Master.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := g.Replica.Resume(); err != nil {
				t.Fatal(err)
			}
			g.Failover(t)
			if addr, err := g.MasterAddr(ctx); err != nil || addr != g.Replica.Addr() {
				t.Fatalf("master after the failover: %q, %v; want %s", addr, err, g.Replica.Addr())
			}

			// A new client (a new process) finds the new master through
			// the sentinels; the failover lost the stale holder's grant.
			next := acquire(listEngine(t, g.Client(), opts...), "next")
			newErr := guard.Check(resource, next, "next")
			lateErr := guard.Check(resource, stale, "stale") // the stale holder's late write
			t.Logf("stale holder's token %d, next holder's after the failover %d", stale, next)
			var se *fence.StaleError
			if floor {
				if next <= stale {
					t.Fatalf("token %d after the failover, not above the stale holder's %d", next, stale)
				}
				if newErr != nil {
					t.Fatalf("the guard refused the new holder: %v", newErr)
				}
				if !errors.As(lateErr, &se) || !errors.Is(lateErr, fence.ErrStale) {
					t.Fatalf("the stale holder's late write: %v, want a StaleError", lateErr)
				}
				return
			}
			if next > stale {
				t.Fatalf("control: token %d after the failover is above the stale holder's %d: the test shows nothing", next, stale)
			}
			if !errors.As(newErr, &se) || lateErr != nil {
				t.Fatalf("control: the guard gave the new holder %v and the stale one %v; want the new refused, the stale accepted", newErr, lateErr)
			}
		})
	}
}
