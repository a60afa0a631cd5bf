package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestTimeFloorAcrossStaleFailover: a replica is promoted while the old
// master goes on granting (the grants it never received are what an
// asynchronous failover loses), and the clients move to it. By default (the
// time floor) its next token is above every token the old master handed
// out; with WithoutTimeFloor (the control) the high-water it inherited is
// stale and the token repeats one already handed out.
func TestTimeFloorAcrossStaleFailover(t *testing.T) {
	for _, floor := range []bool{true, false} {
		t.Run(map[bool]string{true: "time floor", false: "control: WithoutTimeFloor"}[floor], func(t *testing.T) {
			var opts []redisengine.Option
			if !floor {
				opts = append(opts, redisengine.WithoutTimeFloor())
			}
			srvs := redistest.StartN(t, 2)
			master, replica := srvs[0], srvs[1]
			ctx := listCtx(t)
			if err := master.Client().ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := replica.Client().Do(ctx, "replicaof", "127.0.0.1", master.Port()).Err(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the replica's sync", func() bool {
				return strings.Contains(replica.Client().Info(ctx, "replication").Val(), "master_link_status:up")
			})
			old := listEngine(t, master.Client(), opts...)
			grant := func(e *redisengine.Engine) uint64 {
				t.Helper()
				g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "job", Owner: "o", Attempt: "o", TTL: time.Minute})
				if err != nil || !g.Acquired {
					t.Fatalf("grant: %+v, %v", g, err)
				}
				if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "job", Owner: "o"}); err != nil {
					t.Fatal(err)
				}
				return g.Token
			}
			for range 10 {
				grant(old)
			}
			fence := redisengine.DefaultPrefix + "{job}:fence"
			waitFor(t, "the replica's copy of the high-water", func() bool {
				return replica.Client().Get(ctx, fence).Val() == master.Client().Get(ctx, fence).Val()
			})
			// The failover: the replica becomes a master; the old master's
			// grants from now on never reach it.
			if err := replica.Client().Do(ctx, "replicaof", "no", "one").Err(); err != nil {
				t.Fatal(err)
			}
			var last uint64
			for range 50 {
				last = grant(old)
			}
			next := grant(listEngine(t, replica.Client(), opts...))
			switch {
			case floor && next <= last:
				t.Fatalf("after the failover token %d, not above the old master's last %d", next, last)
			case !floor && next > last:
				t.Fatalf("control: token %d after the failover is above %d: the test shows nothing", next, last)
			}
			t.Logf("last token on the old master %d, first on the new one %d", last, next)
		})
	}
}

// TestTimeFloorStaleHighWater: a name's high-water set back behind the
// engine's back (what a failover to a stale replica or a lagging AOF leaves)
// does not set tokens back, for a mutex grant, a queued waiter's grant and
// a shared (semaphore) grant alike: every token is at least the server clock.
// The control, WithoutTimeFloor, counts up from the stale value.
func TestTimeFloorStaleHighWater(t *testing.T) {
	const stale = 1000
	grants := map[string]func(context.Context, *redisengine.Engine, string, string) (engine.Grant, error){
		"mutex": func(ctx context.Context, e *redisengine.Engine, name, owner string) (engine.Grant, error) {
			return e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute})
		},
		"waiter": func(ctx context.Context, e *redisengine.Engine, name, owner string) (engine.Grant, error) {
			return e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute,
				Waiter: owner, WaiterTTL: time.Minute, Order: engine.OrderFair})
		},
		"semaphore": func(ctx context.Context, e *redisengine.Engine, name, owner string) (engine.Grant, error) {
			return e.Acquire(ctx, engine.AcquireRequest{
				Name: name, Owner: owner, Attempt: owner, TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1})
		},
	}
	srv := redistest.Start(t)
	for _, floor := range []bool{true, false} {
		var opts []redisengine.Option
		if !floor {
			opts = append(opts, redisengine.WithoutTimeFloor())
		}
		e := listEngine(t, srv.Client(), opts...)
		for kind, grant := range grants {
			t.Run(fmt.Sprintf("%s/floor=%v", kind, floor), func(t *testing.T) {
				ctx := listCtx(t)
				name := fmt.Sprintf("stale-%s-%v", kind, floor)
				first, err := grant(ctx, e, name, "a")
				if err != nil || !first.Acquired {
					t.Fatalf("first grant: %+v, %v", first, err)
				}
				fenceKey := redisengine.DefaultPrefix + "{" + name + "}:fence"
				if err := srv.Client().Set(ctx, fenceKey, stale, goredis.KeepTTL).Err(); err != nil {
					t.Fatal(err)
				}
				next, err := grant(ctx, e, name, "b")
				if err != nil || !next.Acquired {
					if kind == "semaphore" {
						t.Fatalf("second permit: %+v, %v", next, err)
					}
					// The mutex is held by a: take it after a's release.
					if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "a"}); err != nil {
						t.Fatal(err)
					}
					if next, err = grant(ctx, e, name, "b"); err != nil || !next.Acquired {
						t.Fatalf("grant after the release: %+v, %v", next, err)
					}
				}
				switch {
				case floor && next.Token <= first.Token:
					t.Fatalf("token %d after the high-water was set back, not above %d", next.Token, first.Token)
				case !floor && next.Token != stale+1:
					t.Fatalf("control: token %d, want %d (counted up from the stale high-water)", next.Token, stale+1)
				}
			})
		}
	}
}
