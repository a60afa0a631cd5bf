package redis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestAcquireMultiResent: a set's request applied twice (a client library
// resends a command whose reply was lost) is answered granted again with
// the same tokens, not refused as held by its own owner (which left the
// whole set held until its ttl while the caller was told "locked"). A
// resent copy that is refused (a member was freed and taken by another
// owner in between) drops what the first copy granted: a refused request
// holds nothing.
func TestAcquireMultiResent(t *testing.T) {
	srv := redistest.Start(t)
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := func(owner string, names ...string) []engine.AcquireRequest {
		rs := make([]engine.AcquireRequest, len(names))
		for i, n := range names {
			rs[i] = engine.AcquireRequest{Name: n, Owner: owner, Attempt: owner, OneOff: true, TTL: time.Minute}
		}
		return rs
	}
	rs := set("once", "r-a", "r-b", "r-c")
	first, err := eng.AcquireMulti(ctx, rs)
	if err != nil || !first.Acquired {
		t.Fatalf("first copy: %+v, %v", first, err)
	}
	again, err := eng.AcquireMulti(ctx, rs)
	if err != nil || !again.Acquired || !slices.Equal(again.Tokens, first.Tokens) {
		t.Fatalf("resent copy: %+v, %v; want granted with tokens %v", again, err, first.Tokens)
	}

	// The first copy granted; r-b was then freed and taken by another
	// owner before the copy came: refused, and r-a and r-c are free again.
	rs = set("twice", "s-a", "s-b", "s-c")
	if g, err := eng.AcquireMulti(ctx, rs); err != nil || !g.Acquired {
		t.Fatalf("first copy: %+v, %v", g, err)
	}
	if _, err := eng.ForceRelease(ctx, "s-b"); err != nil {
		t.Fatal(err)
	}
	if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "s-b", Owner: "other", Attempt: "other", TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("other owner: %+v, %v", g, err)
	}
	g, err := eng.AcquireMulti(ctx, rs)
	if err != nil || g.Acquired || g.Blocked != 1 || g.Grant.Holder != "other" {
		t.Fatalf("resent copy: %+v, %v; want refused at s-b by other", g, err)
	}
	for _, name := range []string{"s-a", "s-c"} {
		if info, err := eng.Inspect(ctx, name); err != nil || info.Held {
			t.Errorf("%s after the refused copy: %+v, %v; want free", name, info, err)
		}
	}
}
