//go:build !lite

package fence_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/fence"
	"github.com/distlock/distlock/internal/redistest"
)

// TestExecResentAppliesOnce: go-redis resends a command whose reply was
// lost to a connection reset; a fenced INCRBY 1 must still add 1 (found by
// the safety lab).
func TestExecResentAppliesOnce(t *testing.T) {
	srv := redistest.Start(t)
	drop := redistest.NewReplyDropper(t, srv.Addr())
	rdb := goredis.NewClient(&goredis.Options{Addr: drop.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true})
	defer rdb.Close()
	r := fence.NewRedis(rdb)
	ctx := context.Background()
	// Load the script first, so the dropped reply is the write's own.
	if _, err := r.Exec(ctx, "{n}:fence", 1, "h", []string{"{n}"}, "SET", "{n}", "0"); err != nil {
		t.Fatal(err)
	}
	drop.Arm()
	if _, err := r.Exec(ctx, "{n}:fence", 1, "h", []string{"{n}"}, "INCRBY", "{n}", 1); err != nil {
		t.Fatal(err)
	}
	if drop.Dropped() != 1 {
		t.Fatalf("dropped %d replies, want 1", drop.Dropped())
	}
	if v, err := srv.Client().Get(ctx, "{n}").Int(); err != nil || v != 1 {
		t.Fatalf("counter = %d (%v) after one fenced INCRBY 1 whose reply was lost: applied twice", v, err)
	}
}
