package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// The tests in this file call the engine directly, not through a Client:
// they check the parts of the contract that the Client drives with ids and
// flags of its own (Attempt, Waiting) and the optional interfaces that only
// a quorum or a server calls (engine.FenceRaiser, engine.OnceReleaser).

// directTTL is the ttl of the grants made straight on an engine: nothing
// renews them, and none may expire while a test runs.
const directTTL = 30 * time.Second

// grant acquires name for owner with attempt straight on e and fails the
// test unless it was granted.
func grant(t *testing.T, ctx context.Context, e engine.Engine, name, owner, attempt string) engine.Grant {
	t.Helper()
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, TTL: directTTL, Attempt: attempt})
	if err != nil || !g.Acquired || g.Token == 0 {
		t.Fatalf("acquire %q by %q (attempt %q): %+v, %v", name, owner, attempt, g, err)
	}
	return g
}

// settled inspects name until two reads in a row agree on the grant and
// the high-water (a quorum's stragglers and background phase-2 raises land
// after the call that made them returned), and returns the state.
func settled(t *testing.T, ctx context.Context, e engine.Engine, name string) engine.Info {
	t.Helper()
	var prev, info engine.Info
	var err error
	first := true
	WaitFor(t, 20*time.Second, "the state of "+name+" to settle", func() bool {
		prev = info
		info, err = e.Inspect(ctx, name)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		same := !first && prev.Held == info.Held && prev.Owner == info.Owner && prev.Count == info.Count &&
			prev.Token == info.Token && prev.HighWater == info.HighWater
		first = false
		return same
	})
	return info
}

// wantHeld fails the test unless info says owner holds the lock with count
// holds and token.
func wantHeld(t *testing.T, what string, info engine.Info, owner string, count int, token uint64) {
	t.Helper()
	if !info.Held || info.Owner != owner || info.Count != count || info.Token != token {
		t.Fatalf("%s: %+v, want held by %q with %d holds and token %d", what, info, owner, count, token)
	}
}

// fenceRaiser returns a new engine of the backend as an engine.FenceRaiser,
// or skips the test on a backend that cannot raise fences.
func (s *suite) fenceRaiser(t *testing.T) (engine.Engine, engine.FenceRaiser) {
	t.Helper()
	e := s.h.New(t)
	fr, ok := e.(engine.FenceRaiser)
	if !ok {
		t.Skip("the engine cannot raise fences (engine.FenceRaiser)")
	}
	return e, fr
}

// raiseFenceHolder: RaiseFence by the holder raises the high-water to at
// least the token and makes it the grant's token, which Inspect, Extend and
// a re-entry then report.
func (s *suite) raiseFenceHolder(t *testing.T) {
	e, fr := s.fenceRaiser(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	g := grant(t, ctx, e, name, "holder", "a1")
	before := settled(t, ctx, e, name)
	raised := before.HighWater + 1000
	ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "holder", Token: raised})
	if err != nil || !ok {
		t.Fatalf("RaiseFence by the holder: %v, %v; want true", ok, err)
	}
	info := settled(t, ctx, e, name)
	wantHeld(t, "after the raise", info, "holder", 1, raised)
	if info.HighWater < raised {
		t.Fatalf("after raising to %d (grant token %d): high-water %d", raised, g.Token, info.HighWater)
	}
	rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: "holder", TTL: directTTL}})
	if err != nil || len(rs) != 1 || rs[0].Err != nil || rs[0].Status != engine.Extended || rs[0].Token != raised {
		t.Fatalf("extend after the raise: %+v, %v; want extended with token %d", rs, err, raised)
	}
	if re := grant(t, ctx, e, name, "holder", "a2"); re.Token != raised || re.Count != 2 {
		t.Fatalf("re-entry after the raise: %+v, want token %d and 2 holds", re, raised)
	}
}

// raiseFenceNotHolder: RaiseFence by an owner that does not hold the lock
// (another owner holds it, the owner released it, or nobody ever held it)
// answers false and changes neither the high-water nor the grant.
func (s *suite) raiseFenceNotHolder(t *testing.T) {
	e, fr := s.fenceRaiser(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	g := grant(t, ctx, e, name, "holder", "a1")
	before := settled(t, ctx, e, name)
	raiseBy := func(what, name, owner string, before engine.Info) {
		t.Helper()
		ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: owner, Token: before.HighWater + 1_000_000})
		if err != nil || ok {
			t.Fatalf("RaiseFence %s: %v, %v; want false", what, ok, err)
		}
		after := settled(t, ctx, e, name)
		if after.HighWater != before.HighWater || after.Token != before.Token || after.Held != before.Held ||
			after.Owner != before.Owner || after.Count != before.Count {
			t.Fatalf("RaiseFence %s changed the lock: before %+v, after %+v", what, before, after)
		}
	}
	raiseBy("by another owner", name, "intruder", before)
	wantHeld(t, "the holder", settled(t, ctx, e, name), "holder", 1, g.Token)

	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
		t.Fatalf("release: %+v, %v", r, err)
	}
	raiseBy("by the owner after its release", name, "holder", settled(t, ctx, e, name))

	fresh := lockName(t)
	raiseBy("on a name never held", fresh, "holder", settled(t, ctx, e, fresh))
}

// raiseFenceNeverLowers: RaiseFence with a token below the grant's is
// refused with an *engine.ArgumentError and changes nothing; so is one
// above engine.MaxToken, or more than engine.MaxRaiseAhead ahead of the
// clock. A raise to the grant's own token is accepted and changes nothing.
func (s *suite) raiseFenceNeverLowers(t *testing.T) {
	e, fr := s.fenceRaiser(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	grant(t, ctx, e, name, "holder", "a1")
	high := settled(t, ctx, e, name).HighWater + 1_000_000
	if ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "holder", Token: high}); err != nil || !ok {
		t.Fatalf("RaiseFence to %d: %v, %v", high, ok, err)
	}
	before := settled(t, ctx, e, name)
	wantHeld(t, "after the raise", before, "holder", 1, high)
	if ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "holder", Token: high}); err != nil || !ok {
		t.Fatalf("RaiseFence to the same %d: %v, %v", high, ok, err)
	}
	far := uint64(time.Now().UnixMicro()) + engine.MaxRaiseAhead + uint64(time.Hour/time.Microsecond)
	for _, bad := range []struct {
		what  string
		token uint64
	}{
		{"below the grant's token", high - 500_000},
		{"1", 1},
		{"above 2^53-1", engine.MaxToken + 1},
		{"2^64-1", math.MaxUint64},
		{"more than MaxRaiseAhead ahead of the clock", far},
	} {
		ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "holder", Token: bad.token})
		var ae *engine.ArgumentError
		if ok || !errors.As(err, &ae) || ae.Arg != "token" {
			t.Fatalf("RaiseFence %s (%d): %v, %v; want an *engine.ArgumentError about the token", bad.what, bad.token, ok, err)
		}
		after := settled(t, ctx, e, name)
		if after.Token != before.Token || after.HighWater != before.HighWater || after.Owner != before.Owner || after.Count != before.Count {
			t.Fatalf("RaiseFence %s changed the lock: before %+v, after %+v", bad.what, before, after)
		}
	}
}

// raiseFenceNextGrant: after a raise, the next grant of the name (another
// owner's, after the release) mints a token above the raised value.
func (s *suite) raiseFenceNextGrant(t *testing.T) {
	e, fr := s.fenceRaiser(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	grant(t, ctx, e, name, "holder", "a1")
	// Far above the high-water and the clocks that seed tokens (an hour
	// of microseconds): the next token can only come from the raise.
	raised := settled(t, ctx, e, name).HighWater + uint64(time.Hour/time.Microsecond)
	if ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "holder", Token: raised}); err != nil || !ok {
		t.Fatalf("RaiseFence to %d: %v, %v", raised, ok, err)
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
		t.Fatalf("release: %+v, %v", r, err)
	}
	settled(t, ctx, e, name)
	next := grant(t, ctx, e, name, "next", "b1")
	if next.Token <= raised {
		t.Fatalf("the grant after a raise to %d minted token %d", raised, next.Token)
	}
	if info := settled(t, ctx, e, name); info.HighWater < next.Token {
		t.Fatalf("after the grant of token %d: high-water %d", next.Token, info.HighWater)
	}
}

// releaseOnceReplay: on an engine.OnceReleaser, ReleaseOnce drops one hold,
// and the same id again while the lock is still held (a resent copy, or a
// quorum's retry) drops none: it is answered as a release that leaves the
// holds there are. This holds also when the owner re-entered between the
// two copies (the lock records the id of its last release). Once the last
// hold is gone, a copy finds the lock free (NotHeld) or another owner's
// (NotOwner), and changes nothing.
func (s *suite) releaseOnceReplay(t *testing.T) {
	e := s.h.New(t)
	o := onceReleaser(t, e)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	g := grant(t, ctx, e, name, "owner", "a1")
	grant(t, ctx, e, name, "owner", "a2")
	release := replayer(t, ctx, o, engine.ReleaseRequest{Name: name, Owner: "owner"})
	release("r1", "r1", engine.Released, 1)
	release("r1 again", "r1", engine.Released, 1)
	wantHeld(t, "after r1 twice", settled(t, ctx, e, name), "owner", 1, g.Token)

	grant(t, ctx, e, name, "owner", "a3")
	release("r1 once more, after a re-entry", "r1", engine.Released, 2)
	wantHeld(t, "after a late copy of r1", settled(t, ctx, e, name), "owner", 2, g.Token)

	release("r2", "r2", engine.Released, 1)
	release("r3", "r3", engine.Released, 0)
	if info := settled(t, ctx, e, name); info.Held {
		t.Fatalf("after every hold was released: %+v", info)
	}
	release("r3 again, on the free lock", "r3", engine.NotHeld, 0)
	if info := settled(t, ctx, e, name); info.Held {
		t.Fatalf("a copy of the last release changed the free lock: %+v", info)
	}

	other := grant(t, ctx, e, name, "other", "b1")
	if r, err := o.ReleaseOnce(ctx, engine.ReleaseRequest{Name: name, Owner: "owner"}, "r3"); err != nil || r.Status != engine.NotOwner {
		t.Fatalf("a copy of the last release under another holder: %+v, %v; want NotOwner", r, err)
	}
	wantHeld(t, "the other holder", settled(t, ctx, e, name), "other", 1, other.Token)
}

// releaseOnceReplayShared is releaseOnceReplay for a shared lock's holder
// (an RW lock's reader, which every engine with shared locks keeps): a
// copy of a count-down drops no second hold, also after the owner
// re-entered between the two copies, and a copy of the release of the
// last hold finds the owner holding nothing (NotHeld; a quorum's straggler
// may answer Released) and drops nothing: a writer is granted. An engine
// whose shared locks cannot release once (errors.ErrUnsupported) skips.
func (s *suite) releaseOnceReplayShared(t *testing.T) {
	s.sharer(t)
	e := s.h.New(t)
	o := onceReleaser(t, e)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	read := func(attempt string) {
		t.Helper()
		r := engine.AcquireRequest{Name: name, Owner: "owner", Attempt: attempt, TTL: directTTL,
			Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("read lock (attempt %q): %+v, %v", attempt, g, err)
		}
	}
	release := replayer(t, ctx, o, engine.ReleaseRequest{Name: name, Owner: "owner", Kind: engine.RWLock})
	holds := func(what string, want int) {
		t.Helper()
		got := -1
		WaitFor(t, 20*time.Second, fmt.Sprintf("%s: the reader to hold %d times", what, want), func() bool {
			info, err := e.Inspect(ctx, name)
			if err != nil {
				t.Fatalf("inspect: %v", err)
			}
			got = 0
			for _, h := range info.Holders {
				if h.Owner == "owner" {
					got = h.Count
				}
			}
			return got == want
		})
	}
	read("a1")
	read("a2")
	release("r1", "r1", engine.Released, 1)
	release("r1 again", "r1", engine.Released, 1)
	holds("after r1 twice", 1)

	read("a3")
	release("r1 once more, after a re-entry", "r1", engine.Released, 2)
	holds("after a late copy of r1", 2)

	release("r2", "r2", engine.Released, 1)
	release("r3", "r3", engine.Released, 0)
	holds("after every hold was released", 0)
	// A quorum's node that had not applied r3 yet (a straggler) applies
	// one of the two copies there: Released is then the copy's answer too.
	r, err := o.ReleaseOnce(ctx, engine.ReleaseRequest{Name: name, Owner: "owner", Kind: engine.RWLock}, "r3")
	if err != nil || r.Remaining != 0 || r.Status != engine.NotHeld && r.Status != engine.Released {
		t.Fatalf("ReleaseOnce r3 again, on the free lock: %+v, %v; want NotHeld (or Released) with no hold left", r, err)
	}
	holds("after a copy of the last release", 0)
	if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "writer", Attempt: "w", TTL: directTTL,
		Kind: engine.RWLock, Limit: engine.RWPermits, Weight: engine.RWPermits}); err != nil || !g.Acquired {
		t.Fatalf("a writer after every read hold was released: %+v, %v", g, err)
	}
}

// releaseOnceAfterOthers: a late copy of a ReleaseOnce drops nothing also
// when other releases of the owner's holds came between the release and
// its copy: a plain Release (which carries no id of the caller's, or one
// of the engine's own) and another ReleaseOnce, for a mutex and for a
// shared lock's holder (an RW lock's reader). The lock keeps the ids of
// the owner's last releases, not only the last one's. An engine whose
// shared locks cannot release once skips that half.
func (s *suite) releaseOnceAfterOthers(t *testing.T) {
	t.Run("mutex", func(t *testing.T) {
		s.releaseOnceAfterOthersOf(t, engine.AcquireRequest{Kind: engine.Mutex})
	})
	t.Run("reader", func(t *testing.T) {
		s.sharer(t)
		s.releaseOnceAfterOthersOf(t, engine.AcquireRequest{Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1})
	})
}

// releaseOnceAfterOthersOf is releaseOnceAfterOthers for the kind of k.
func (s *suite) releaseOnceAfterOthersOf(t *testing.T, k engine.AcquireRequest) {
	e := s.h.New(t)
	o := onceReleaser(t, e)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	for _, a := range []string{"a1", "a2", "a3", "a4"} {
		r := engine.AcquireRequest{Name: name, Owner: "owner", Attempt: a, TTL: directTTL, Kind: k.Kind, Limit: k.Limit, Weight: k.Weight}
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("acquire %s: %+v, %v", a, g, err)
		}
	}
	req := engine.ReleaseRequest{Name: name, Owner: "owner", Kind: k.Kind}
	release := replayer(t, ctx, o, req)
	release("r1", "r1", engine.Released, 3)
	if res, err := e.Release(ctx, req); err != nil || res.Status != engine.Released || res.Remaining != 2 {
		t.Fatalf("a plain release after r1: %+v, %v; want released with 2 left", res, err)
	}
	release("r2", "r2", engine.Released, 1)
	release("a late copy of r1, after a plain release and r2", "r1", engine.Released, 1)
	release("a late copy of r2", "r2", engine.Released, 1)
	release("r3", "r3", engine.Released, 0)
}

// onceReleaser returns e as an engine.OnceReleaser, or skips the test.
func onceReleaser(t *testing.T, e engine.Engine) engine.OnceReleaser {
	t.Helper()
	o, ok := e.(engine.OnceReleaser)
	if !ok {
		t.Skip("the engine has no idempotent release (engine.OnceReleaser)")
	}
	return o
}

// replayer returns a call of ReleaseOnce of r with an id, which fails the
// test unless it answers want with remaining holds left; an engine that
// cannot release r's kind once (errors.ErrUnsupported) skips the test.
func replayer(t *testing.T, ctx context.Context, o engine.OnceReleaser, r engine.ReleaseRequest) func(what, id string, want engine.ReleaseStatus, remaining int) {
	return func(what, id string, want engine.ReleaseStatus, remaining int) {
		t.Helper()
		res, err := o.ReleaseOnce(ctx, r, id)
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skipf("the engine cannot release a %s once: %v", r.Kind, err)
		}
		if err != nil || res.Status != want || res.Remaining != remaining {
			t.Fatalf("ReleaseOnce %s: %+v, %v; want status %d with %d holds left", what, res, err, want, remaining)
		}
	}
}

// attemptReplay: an Acquire resent with the Attempt of the holder's last
// grant or re-entry (its reply was lost) is answered as before and does not
// count a hold; a new Attempt re-enters.
func (s *suite) attemptReplay(t *testing.T) {
	e := s.h.New(t)
	ctx := ctxTimeout(t, 30*time.Second)

	// One grant and its copy: one release frees the lock.
	name := lockName(t)
	g := grant(t, ctx, e, name, "owner", "a1")
	if again := grant(t, ctx, e, name, "owner", "a1"); again.Token != g.Token || again.Count != 1 {
		t.Fatalf("the copy of the grant: %+v, want token %d and 1 hold (first: %+v)", again, g.Token, g)
	}
	wantHeld(t, "after the copy", settled(t, ctx, e, name), "owner", 1, g.Token)
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "owner"}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
		t.Fatalf("one release after a grant and its copy: %+v, %v; want the lock freed", r, err)
	}
	if info := settled(t, ctx, e, name); info.Held {
		t.Fatalf("after one release: %+v, want free", info)
	}

	// A re-entry counts, its copy does not.
	name = lockName(t)
	g = grant(t, ctx, e, name, "owner", "a1")
	grant(t, ctx, e, name, "owner", "a1")
	if re := grant(t, ctx, e, name, "owner", "a2"); re.Token != g.Token || re.Count != 2 {
		t.Fatalf("re-entry with a new attempt: %+v, want token %d and 2 holds", re, g.Token)
	}
	if again := grant(t, ctx, e, name, "owner", "a2"); again.Token != g.Token || again.Count != 2 {
		t.Fatalf("the copy of the re-entry: %+v, want token %d and 2 holds", again, g.Token)
	}
	wantHeld(t, "after the re-entry and its copy", settled(t, ctx, e, name), "owner", 2, g.Token)
	// The holds left after the first release are read back with Inspect
	// (what a majority of a quorum's nodes confirms): a quorum answers as
	// soon as a majority did, and a straggler may not have seen the
	// re-entry yet.
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "owner"}); err != nil || r.Status != engine.Released {
		t.Fatalf("first release: %+v, %v", r, err)
	}
	wantHeld(t, "after one release", settled(t, ctx, e, name), "owner", 1, g.Token)
	// The last release frees the lock on a majority: its answer says so,
	// even when a node applied it before a late first release (a quorum
	// once answered one hold left here).
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "owner"}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
		t.Fatalf("second release: %+v, %v; want no hold left", r, err)
	}
	if info := settled(t, ctx, e, name); info.Held {
		t.Fatalf("after two releases: %+v, want free", info)
	}
}

// attemptReplayOneOff: a one-off owner (OneOff, its owner as Attempt) whose
// grant is sent twice holds the lock once.
func (s *suite) attemptReplayOneOff(t *testing.T) {
	e := s.h.New(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	owner := fmt.Sprintf("one-off-%x", rand.Uint64()) // as the Client's random owners
	req := engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, OneOff: true, TTL: directTTL}
	g, err := e.Acquire(ctx, req)
	if err != nil || !g.Acquired || g.Count != 1 {
		t.Fatalf("one-off grant: %+v, %v", g, err)
	}
	settled(t, ctx, e, name)
	again, err := e.Acquire(ctx, req)
	want := g.Token
	if _, quorum := e.(interface{ Majority() int }); quorum && again.Token > g.Token {
		// A quorum's copy may be decided on a majority that includes a
		// node whose late grant kept a token above the first's (a raise
		// never lowers it): phase 2 then settles the copy's higher token.
		want = again.Token
	}
	if err != nil || !again.Acquired || again.Token != want || again.Count != 1 {
		t.Fatalf("the copy of a one-off grant: %+v, %v; want granted with token %d and 1 hold", again, err, g.Token)
	}
	wantHeld(t, "after the copy", settled(t, ctx, e, name), owner, 1, want)
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
		t.Fatalf("release: %+v, %v; want the lock freed", r, err)
	}
	if info := settled(t, ctx, e, name); info.Held {
		t.Fatalf("after one release: %+v, want free", info)
	}
}

// waitingWakesSubscriber: a Waiting acquire refused by a held lock obliges
// the engine to wake a Subscription on the name when the holder releases
// it, whether the waiter subscribed before that attempt or after it (but
// before the release). (Without Waiting an engine may stay silent, so this
// is what a waiter outside a queue relies on.)
func (s *suite) waitingWakesSubscriber(t *testing.T) {
	for _, subscribeFirst := range []bool{true, false} {
		what := "subscribed after the waiting attempt"
		if subscribeFirst {
			what = "subscribed before the waiting attempt"
		}
		t.Run(what, func(t *testing.T) { s.waitingWakes(t, subscribeFirst) })
	}
}

// waitingWakes runs waitingWakesSubscriber with one order of the waiter's
// subscription and its waiting attempt.
func (s *suite) waitingWakes(t *testing.T, subscribeFirst bool) {
	holder, waiter := s.h.New(t), s.h.New(t)
	ctx := ctxTimeout(t, 30*time.Second)
	name := lockName(t)
	grant(t, ctx, holder, name, "holder", "h1")
	var sub engine.Subscription
	subscribe := func() {
		var err error
		if sub, err = waiter.Subscribe(ctx, name); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		t.Cleanup(sub.Close)
	}
	if subscribeFirst {
		subscribe()
	}
	g, err := waiter.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "waiter", Attempt: "w1", TTL: directTTL, Waiting: true})
	if err != nil || g.Acquired || g.Holder == "" {
		t.Fatalf("the waiting attempt on the held lock: %+v, %v; want refused with the holder", g, err)
	}
	if !subscribeFirst {
		subscribe()
	}
	// A wake-up before the release (an engine may wake when it could have
	// missed a release) is not the one this test is about.
	select {
	case <-sub.C():
	default:
	}
	if r, err := holder.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
		t.Fatalf("the holder's release: %+v, %v", r, err)
	}
	select {
	case <-sub.C():
	case <-ctx.Done():
		t.Fatal("the release did not wake the subscriber of a waiting acquire")
	}
}
