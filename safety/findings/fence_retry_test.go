package findings

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/fence"
	"github.com/distlock/distlock/internal/redistest"
)

// TestFenceExecResentRunsOnce: one fence.Redis.Exec call must run its
// command at most once. Exec runs the command in a Lua script, and go-redis
// (default options) resends a command whose reply was lost to a connection
// reset; the resent script passes the fence again (a tie from the same
// holder) and runs the command a second time. Harmless for SET or HSET,
// wrong for INCRBY, LPUSH or SADD-and-count, which the Exec documentation
// offers as examples: one INCRBY 1 adds 2, and Exec returns no error. The
// same class of bug as the engine's release (finding 2), which now carries
// a release id; the lab's resource clients avoid it with MaxRetries: -1.
func TestFenceExecResentRunsOnce(t *testing.T) {
	srv := redistest.Start(t)
	drop := redistest.NewReplyDropper(t, srv.Addr())
	rdb := goredis.NewClient(&goredis.Options{Addr: drop.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true})
	defer rdb.Close()
	g := fence.NewRedis(rdb)
	ctx := context.Background()
	// Load the script first: the lost reply must be the write's own.
	if _, err := g.Exec(ctx, "n:fence", 1, "h1", []string{"n"}, "INCRBY", "n", 1); err != nil {
		t.Fatal(err)
	}
	drop.Arm()
	_, err := g.Exec(ctx, "n:fence", 2, "h2", []string{"n"}, "INCRBY", "n", 1)
	if drop.Dropped() != 1 {
		t.Fatalf("dropped %d replies, want 1", drop.Dropped())
	}
	n, _ := srv.Client().Get(ctx, "n").Int()
	if n != 2 {
		t.Fatalf("two fenced INCRBY 1 calls (the second's reply lost, Exec returned %v) left n = %d, want 2", err, n)
	}
}
