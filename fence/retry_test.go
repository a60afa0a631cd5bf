//go:build !lite

package fence_test

import (
	"context"
	"testing"
	"time"

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

// TestExecResentAfterAnotherWrite: holder h's INCRBY 1 has its reply lost;
// before go-redis resends it (after a retry backoff made 500ms here), another
// fenced write lands on the same fence key, by h under the same token or by
// a newer holder. The resend must not run again (the counter shows one
// application) and must not be reported stale: its write ran. Found by an
// outside tester: the script used to compare the call's write id with the
// id of the last write only, which the write in between replaced.
func TestExecResentAfterAnotherWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		token  uint64
		holder string
	}{
		{"same holder", 100, "h"},
		{"newer holder", 101, "n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			srv := redistest.Start(t)
			direct := srv.Client()
			drop := redistest.NewReplyDropper(t, srv.Addr())
			rdb := goredis.NewClient(&goredis.Options{Addr: drop.Addr(), DisableIdentity: true,
				MinRetryBackoff: 500 * time.Millisecond, MaxRetryBackoff: 500 * time.Millisecond})
			defer rdb.Close()
			r := fence.NewRedis(rdb)
			fk := fence.FenceKeyFor("counter")
			// Load the script first, so the dropped reply is the write's own.
			if _, err := r.Exec(ctx, fk, 100, "h", []string{"counter"}, "SET", "counter", "0"); err != nil {
				t.Fatal(err)
			}
			drop.Arm()
			type result struct {
				reply any
				err   error
			}
			done := make(chan result, 1)
			go func() {
				reply, err := r.Exec(ctx, fk, 100, "h", []string{"counter"}, "INCRBY", "counter", 1)
				done <- result{reply, err}
			}()
			// Wait for the first copy to have run; the resend comes 500ms
			// after its reply was dropped.
			for {
				if v, _ := direct.Get(ctx, "counter").Int(); v == 1 {
					break
				}
				select {
				case res := <-done:
					t.Fatalf("Exec ended (%#v, %v) before its first copy was seen", res.reply, res.err)
				case <-time.After(time.Millisecond):
				}
			}
			if _, err := fence.NewRedis(direct).Exec(ctx, fk, tc.token, tc.holder, []string{"counter"}, "INCRBY", "counter", 100); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if drop.Dropped() != 1 {
				t.Fatalf("dropped %d replies, want 1", drop.Dropped())
			}
			if res.err != nil || res.reply != nil {
				t.Errorf("resent Exec = %#v, %v; want nil, nil (its write ran)", res.reply, res.err)
			}
			if v, err := direct.Get(ctx, "counter").Int(); err != nil || v != 101 {
				t.Errorf("counter = %d (%v) after INCRBY 1 and 100; want 101", v, err)
			}
			wantHighest(t, ctx, fence.NewRedis(direct), fk, tc.token)
		})
	}
}
