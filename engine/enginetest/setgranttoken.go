package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// setReleaseGrantToken: a set's release names each member's grant token,
// as a lease's release does. A member force-released whose owner was then
// granted the name anew (WithOwner(set.Owner(name)), another process) is
// not released by the set: its newer grant keeps the name (another Client
// is refused), the set's Release reports the member taken over, and the
// other members are released. Engines that release a set in one call
// (engine.MultiReleaser) and those that release member by member alike.
func (s *suite) setReleaseGrantToken(t *testing.T) {
	if s.h.UncheckedTokens {
		t.Skip("the engine does not check grant tokens (Harness.UncheckedTokens)")
	}
	if _, ok := s.h.New(t).(engine.ForceReleaser); !ok {
		t.Skip("the engine cannot force-release (engine.ForceReleaser)")
	}
	ctx := ctxTimeout(t, time.Minute)
	c1, c2, c3 := s.client(t), s.client(t), s.client(t)
	p := lockName(t) + "/"
	a, b := p+"a", p+"b"
	set, err := c1.AcquireAll(ctx, []string{a, b}, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if freed, err := c2.ForceRelease(ctx, a); err != nil || !freed {
		t.Fatalf("force-release of %q: %v, %v", a, freed, err)
	}
	newer, err := c2.Acquire(ctx, a, distlock.WithOwner(set.Owner(a)), distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Release(ctx)
	if newer.Token() <= set.Token(a) {
		t.Fatalf("the grant after the force-release has token %d, not above the set's %d", newer.Token(), set.Token(a))
	}
	err = set.Release(ctx)
	var le *distlock.LostError
	if !errors.As(err, &le) || le.Name != a || le.Cause != distlock.TakenOver {
		t.Fatalf("the set's release: %v; want a *LostError of %q, taken over", err, a)
	}
	if err := newer.Err(); err != nil {
		t.Fatalf("the owner's newer grant of %q ended at the set's release: %v", a, err)
	}
	info, err := c3.Inspect(ctx, a)
	if err != nil || !info.Held || info.Token != newer.Token() {
		t.Fatalf("%q after the set's release: %+v, %v; want held by the newer grant (token %d)", a, info, err, newer.Token())
	}
	if l, err := c3.TryAcquire(ctx, a); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("another Client's TryAcquire of %q beside the newer grant: %v, %v; want ErrLocked", a, l, err)
	}
	assertSetFree(t, c3, b)
	if err := newer.Release(ctx); err != nil {
		t.Fatalf("the newer grant's release: %v", err)
	}
}

// setOwnerHoldsName: a set asked by an explicit owner (not one-off: a
// server's client may hold locks of its own under that owner) never takes
// or drops a name the owner holds already under another attempt. A set
// over that name is refused naming it, the owner's hold unchanged (its
// token and count), the set's other names free; a set refused on a name
// another owner holds leaves the owner's own hold of a third name alone.
// Engines that grant sets in one step (engine.MultiAcquirer).
func (s *suite) setOwnerHoldsName(t *testing.T) {
	e := s.h.New(t)
	ma, ok := e.(engine.MultiAcquirer)
	if !ok {
		t.Skip("the engine grants no set in one step (engine.MultiAcquirer)")
	}
	ctx := ctxTimeout(t, time.Minute)
	p := lockName(t) + "}/" // one hash tag: one step on Redis Cluster too
	a, b, c := p+"a", p+"b", p+"c"
	take := func(name, owner string) engine.Grant {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: directTTL})
		if err != nil || !g.Acquired {
			t.Fatalf("%s's acquire of %q: %+v, %v", owner, name, g, err)
		}
		return g
	}
	own, other := take(a, "x"), take(c, "z")
	set := func(attempt string, names ...string) []engine.AcquireRequest {
		rs := make([]engine.AcquireRequest, len(names))
		for i, n := range names {
			rs[i] = engine.AcquireRequest{Name: n, Owner: "x", Attempt: attempt, TTL: directTTL}
		}
		return rs
	}
	unchanged := func(what string) {
		t.Helper()
		for _, h := range []struct {
			name, owner string
			token       uint64
		}{{a, "x", own.Token}, {c, "z", other.Token}} {
			info, err := e.Inspect(ctx, h.name)
			if err != nil || !info.Held || info.Owner != h.owner || info.Token != h.token || info.Count != 1 {
				t.Fatalf("%s: %q is %+v, %v; want held once by %s with token %d", what, h.name, info, err, h.owner, h.token)
			}
		}
		if info, err := e.Inspect(ctx, b); err != nil || info.Held {
			t.Fatalf("%s: %q is %+v, %v; want free", what, b, info, err)
		}
	}
	for _, tc := range []struct {
		what    string
		rs      []engine.AcquireRequest
		blocked int
	}{
		{"a set over the owner's own lock", set("set-1", a, b), 0},
		{"a set refused on another owner's lock", set("set-2", a, c), 0},
		{"a set of a free name and another owner's lock", set("set-3", b, c), 1},
	} {
		mg, err := ma.AcquireMulti(ctx, tc.rs)
		if err != nil || mg.Acquired || mg.Blocked != tc.blocked {
			t.Fatalf("%s: %+v, %v; want refused at index %d", tc.what, mg, err, tc.blocked)
		}
		unchanged(tc.what)
	}
}
