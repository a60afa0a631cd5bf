package enginetest

import (
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestFailedReentryJudged: a re-entry that failed (its grant came back
// after its validity: the Client drops the hold it added) while the
// owner's grant may still be live does not make the owner's next
// re-entry, which joins that grant with its token, a new grant that must
// have a larger token. The same re-entries after the owner's grant ended
// are still judged as a new grant repeating a token.
func TestFailedReentryJudged(t *testing.T) {
	ms := time.Millisecond
	ev := func(kind opKind, ttl, inv, resp time.Duration, out outcome, token uint64) *event {
		return &event{Client: 0, Op: op{Kind: kind, TTL: ttl}, Name: "n0", Owner: "o", Inv: inv, Resp: resp,
			Class: classMutex, Weight: 1, Out: out, Token: token}
	}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what string
		evs  []*event
		want bool // a token violation
	}{
		{"failed re-entry while held", []*event{
			ev(opTry, 450*ms, 586*ms, 649*ms, outOK, 7),
			ev(opReenter, 150*ms, 686*ms, 972*ms, outOther, 0),
			ev(opReenter, 150*ms, 1026*ms, 1049*ms, outOK, 7)}, false},
		{"failed re-entry after the grant ended", []*event{
			ev(opTry, 150*ms, 0, 10*ms, outOK, 7),
			ev(opReenter, 150*ms, 5000*ms, 5010*ms, outOther, 0),
			ev(opReenter, 150*ms, 5020*ms, 5030*ms, outOK, 7)}, true},
	} {
		bad := judge(&history{Names: []string{"n0"}, Events: tc.evs}, timing{fit: fit, slack: 150 * ms})
		got := strings.Contains(strings.Join(bad, "\n"), "tokens:")
		if got != tc.want {
			t.Errorf("%s: violations %q, want a token violation: %v", tc.what, bad, tc.want)
		}
	}
}

// TestForceHolderFreesLatestGrant: a force-release of a holder names its
// owner, so it frees the owner's latest grant even when the lease the op
// took the owner from holds an earlier grant's token (the owner released
// it and was granted again). A grant to another owner after it is no
// exclusion violation; before it, it is.
func TestForceHolderFreesLatestGrant(t *testing.T) {
	ms := time.Millisecond
	ev := func(kind opKind, owner string, inv, resp time.Duration, token, target uint64) *event {
		return &event{Client: 0, Op: op{Kind: kind, TTL: time.Minute}, Name: "n0", Owner: owner, Inv: inv, Resp: resp,
			Class: classMutex, Weight: 1, Out: outOK, Token: token, Target: target}
	}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what string
		evs  []*event
		want bool // an exclusion violation
	}{
		{"another owner granted after the force-release", []*event{
			ev(opTry, "a", 0, 1*ms, 7, 0),
			ev(opRelease, "a", 2*ms, 3*ms, 0, 7),
			ev(opTry, "a", 4*ms, 5*ms, 9, 0),
			ev(opForceHolder, "a", 6*ms, 7*ms, 0, 7),
			ev(opTry, "b", 8*ms, 9*ms, 11, 0)}, false},
		{"another owner granted with no force-release", []*event{
			ev(opTry, "a", 0, 1*ms, 7, 0),
			ev(opRelease, "a", 2*ms, 3*ms, 0, 7),
			ev(opTry, "a", 4*ms, 5*ms, 9, 0),
			ev(opTry, "b", 8*ms, 9*ms, 11, 0)}, true},
	} {
		bad := judge(&history{Names: []string{"n0"}, Events: tc.evs}, timing{fit: fit, slack: 5 * ms, tokens: true})
		got := strings.Contains(strings.Join(bad, "\n"), "exclusion:")
		if got != tc.want {
			t.Errorf("%s: violations %q, want an exclusion violation: %v", tc.what, bad, tc.want)
		}
	}
}

// TestExpiredReleaseOfReenteredGrantJudged: an owner holds a name twice
// (a grant and a re-entry that joined it, with a later deadline) and
// releases the first lease after that lease's own deadline: its Client
// answers "not held" (lost, expired) and sends the release all the same,
// which drops one of the two holds; the grant stays, and a view that shows
// the owner holding before the re-entry's ttl has run out is no violation
// (checker seed 7066139599808966942 on Redis, run L51). Without the
// re-entry, the same view is one.
func TestExpiredReleaseOfReenteredGrantJudged(t *testing.T) {
	ms := time.Millisecond
	view := &event{Client: 1, Op: op{Kind: opInspect}, Name: "n0", Inv: 509 * ms, Resp: 535 * ms, Out: outOK,
		Infos: []engine.Info{{Name: "n0", Held: true, Kind: engine.Mutex, Holders: []engine.Holder{{Owner: "o", Token: 7}}}}}
	grant := &event{Client: 0, Op: op{Kind: opAcquire, TTL: 300 * ms}, Name: "n0", Owner: "o", Inv: 40 * ms, Resp: 75 * ms,
		Class: classMutex, Weight: 1, Out: outOK, Token: 7}
	reentry := &event{Client: 0, Op: op{Kind: opReenter, TTL: 300 * ms}, Name: "n0", Owner: "o", Inv: 275 * ms, Resp: 315 * ms,
		Class: classMutex, Weight: 1, Out: outOK, Token: 7}
	release := &event{Client: 0, Op: op{Kind: opRelease}, Name: "n0", Owner: "o", Inv: 339 * ms, Resp: 342 * ms,
		Out: outNotHeld, Target: 7, TargetEnd: 335 * ms, PastDeadline: true}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what string
		evs  []*event
		want bool // a view violation
	}{
		{"re-entered", []*event{grant, reentry, release, view}, false},
		{"not re-entered", []*event{grant, release, view}, true},
	} {
		bad := judge(&history{Names: []string{"n0"}, Events: tc.evs}, timing{fit: fit, slack: 20 * ms, tokens: true})
		got := strings.Contains(strings.Join(bad, "\n"), "view:")
		if got != tc.want {
			t.Errorf("%s: violations %q, want a view violation: %v", tc.what, bad, tc.want)
		}
	}
}

// TestSetRoundsJudged: a set that waits (AcquireAll) may take its names
// in rounds, each with random owners of its own, giving back what a round
// took when another name is held; only the granted round's owners are in
// the history. A view that shows an earlier round's owner holding while
// the call ran is no violation (quorum checker seed 3780874221479500644,
// run Q56); after the call, it is one.
func TestSetRoundsJudged(t *testing.T) {
	ms := time.Millisecond
	set := &event{Client: 0, Op: op{Kind: opSetAcquire, TTL: 150 * ms}, Name: "n1", Owner: "final", Inv: 116 * ms, Resp: 311 * ms,
		Class: classMutex, Weight: 1, Out: outOK, Token: 9}
	view := func(inv time.Duration) *event {
		return &event{Client: 1, Op: op{Kind: opInspect}, Name: "n1", Inv: inv, Resp: inv + 20*ms, Out: outOK,
			Infos: []engine.Info{{Name: "n1", Held: true, Kind: engine.Mutex, Holders: []engine.Holder{{Owner: "earlier-round", Token: 7}}}}}
	}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what string
		evs  []*event
		want bool // a view violation
	}{
		{"while the set waited", []*event{set, view(126 * ms)}, false},
		{"long after the set", []*event{set, view(900 * ms)}, true},
	} {
		bad := judge(&history{Names: []string{"n1"}, Events: tc.evs}, timing{fit: fit, slack: 20 * ms, tokens: true})
		got := strings.Contains(strings.Join(bad, "\n"), "view:")
		if got != tc.want {
			t.Errorf("%s: violations %q, want a view violation: %v", tc.what, bad, tc.want)
		}
	}
}
