package postgres_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// TestLatchLostAnswer: a CountDown applied by PostgreSQL whose answer is
// lost (the connection cut while the reply is held) is sent again with
// the same call id; the second copy finds the id among the last applied
// and counts nothing: the call answers the count after its one count, and
// the latch has counted once.
func TestLatchLostAnswer(t *testing.T) {
	const schema = "latch_lost"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	installStall(t, ctx, pool, schema, "BEFORE UPDATE ON latches")
	proxy, err := pgtest.NewProxy(net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const app = "lost-count-down"
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&application_name=%s&distlock_test.stall=on", proxy.Port(), app)
	e := newEngine(t, poolOn(t, url), schema)
	watch := newEngine(t, pool, schema)
	name := uniqueName(t)
	if set, err := watch.SetCount(ctx, name, 3); !set || err != nil {
		t.Fatalf("SetCount: %v, %v", set, err)
	}

	letGo := holdStall(t, ctx)
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := e.CountDown(ctx, name, "call-1")
		done <- result{n, err}
	}()
	waitLocked(t, ctx, app, 1) // in the trigger, before its update
	proxy.Pause()              // the answer will be held
	letGo()
	waitFor(t, "the CountDown's commit", func() bool {
		n, err := watch.Count(ctx, name)
		return err == nil && n == 2
	})
	proxy.Cut() // the answer is lost; the copy sent again goes through
	r := <-done
	if r.err != nil || r.n != 2 {
		t.Fatalf("a CountDown whose answer was lost: %d, %v; want 2, nil", r.n, r.err)
	}
	if n, err := watch.Count(ctx, name); err != nil || n != 2 {
		t.Fatalf("count after the resent copy: %d, %v; want 2 (counted once)", n, err)
	}
	if n, err := e.CountDown(ctx, name, "call-2"); err != nil || n != 1 {
		t.Fatalf("the next CountDown: %d, %v; want 1", n, err)
	}
}
