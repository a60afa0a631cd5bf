package distlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestAcquireAllCluster: on Redis Cluster a set whose names share a hash
// tag is granted by one script; a set across slots is refused by the
// script's engine (ErrNotAtomic, nothing changed) and taken name by name
// by the Client, all or nothing all the same.
func TestAcquireAllCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	eng, err := redisengine.New(cl.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := testCtx(t, 20*time.Second)
	c := distlock.New(eng)
	defer c.Close()

	tagged := []string{"acct}alice", "acct}bob", "acct}carol"}
	spread := []string{"x", "y", "z", "w"}
	req := func(names []string) []engine.AcquireRequest {
		rs := make([]engine.AcquireRequest, len(names))
		for i, n := range names {
			rs[i] = engine.AcquireRequest{Name: n, Owner: "o", Attempt: "o", OneOff: true, TTL: time.Second}
		}
		return rs
	}
	if _, err := eng.AcquireMulti(ctx, req(spread)); !errors.Is(err, engine.ErrNotAtomic) {
		t.Fatalf("names across slots: %v; want ErrNotAtomic", err)
	}
	assertFree(t, c, spread...)
	mg, err := eng.AcquireMulti(ctx, req(tagged))
	if err != nil || !mg.Acquired || len(mg.Tokens) != len(tagged) {
		t.Fatalf("names of one hash tag: %+v, %v; want granted by one script", mg, err)
	}
	if _, err := eng.ReleaseMulti(ctx, enginetest.ReleaseRequests(tagged, "o")); err != nil {
		t.Fatal(err)
	}
	assertFree(t, c, tagged...)

	for _, names := range [][]string{tagged, spread} {
		s, err := c.AcquireAll(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		var le *distlock.LockedError
		if _, err := c.TryAcquireAll(ctx, []string{"free", names[1]}); !errors.As(err, &le) || le.Name != names[1] {
			t.Fatalf("overlapping set: %v", err)
		}
		assertFree(t, c, "free")
		if err := s.Release(ctx); err != nil {
			t.Fatal(err)
		}
		assertFree(t, c, names...)
	}
}
