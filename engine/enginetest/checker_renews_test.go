package enginetest

import (
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestRenewalsJudged: on a backend whose faults may restart a live lease
// at its full ttl (Faults.Renews, etcd's elections), an Inspect that shows
// a holder long past its ttl is no violation when faults overlapping the
// lease's possible life came one after another, each within a ttl of the
// one before; it is one without Renews, after a released lease, and after
// the last fault's ttl.
func TestRenewalsJudged(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	grant := &event{Client: 0, Op: op{Kind: opTry, TTL: 2 * s}, Owner: "o", Inv: 0, Resp: 10 * ms, Class: classMutex, Weight: 1, Out: outOK, Token: 7}
	stall := func(from, to time.Duration) *event {
		return &event{Client: 1, Op: op{Kind: opStall, Wait: to - from}, Inv: from, Resp: to, Out: outOK}
	}
	view := func(at time.Duration) *event {
		return &event{Client: 2, Op: op{Kind: opInspect}, Inv: at, Resp: at + 5*ms, Out: outOK,
			Infos: []engine.Info{{Name: "n0", Held: true, Owner: "o", Token: 7, Count: 1, Holders: []engine.Holder{{Owner: "o", Count: 1, Token: 7, Weight: 1}}}}}
	}
	release := &event{Client: 0, Op: op{Kind: opRelease}, Owner: "o", Target: 7, Inv: 1 * s, Resp: 1*s + 5*ms, Out: outOK}
	chain := []*event{grant, stall(1*s, 2*s), stall(3*s, 4*s), stall(5500*ms, 6*s)}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what   string
		evs    []*event
		renews bool
		want   bool // a view violation
	}{
		{"renewed by a chain of faults", append(chain, view(7*s)), true, false},
		{"without Renews", append(chain, view(7*s)), false, true},
		{"past the last fault's ttl", append(chain, view(9*s)), true, true},
		{"released before the faults", append([]*event{grant, release}, append(chain[1:], view(7*s))...), true, true},
	} {
		for _, e := range tc.evs {
			e.Name = "n0"
		}
		bad := judge(&history{Names: []string{"n0"}, Events: tc.evs}, timing{fit: fit, slack: 150 * ms, renews: tc.renews})
		got := strings.Contains(strings.Join(bad, "\n"), "view:")
		if got != tc.want {
			t.Errorf("%s: violations %q, want a view violation: %v", tc.what, bad, tc.want)
		}
	}
}

// TestLateAppliedJudged: an acquire of unknown outcome (its caller gave up
// during a backend restart) may be applied once the restart is over, since
// the Client never cuts its request short: an Inspect that shows it then is
// no violation, whatever the time since the caller gave up; one after its
// ttl past the restart's end is, and so is one that shows a grant the
// caller gave up on with no fault to hold its request.
func TestLateAppliedJudged(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	gaveUp := &event{Client: 0, Op: op{Kind: opAcquire, TTL: 150 * ms, Wait: 75 * ms}, Owner: "o", Inv: 0, Resp: 300 * ms, Class: classMutex, Weight: 1, Out: outOther}
	restart := &event{Client: 1, Op: op{Kind: opRestart}, Inv: 100 * ms, Resp: 2 * s, Out: outOK}
	stall := &event{Client: 0, Op: op{Kind: opStall, Wait: 2 * s}, Inv: 200 * ms, Resp: 2 * s, Out: outOK}
	otherStall := &event{Client: 1, Op: op{Kind: opStall, Wait: 2 * s}, Inv: 200 * ms, Resp: 2 * s, Out: outOK}
	view := func(at time.Duration) *event {
		return &event{Client: 2, Op: op{Kind: opInspect}, Inv: at, Resp: at + 5*ms, Out: outOK,
			Infos: []engine.Info{{Name: "n0", Held: true, Owner: "o", Token: 7, Count: 1, Holders: []engine.Holder{{Owner: "o", Count: 1, Token: 7, Weight: 1}}}}}
	}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what string
		evs  []*event
		want bool // a view violation
	}{
		{"applied after a restart", []*event{gaveUp, restart, view(2100 * ms)}, false},
		{"applied after its client's stall", []*event{gaveUp, stall, view(2100 * ms)}, false},
		{"past its ttl after the restart", []*event{gaveUp, restart, view(3 * s)}, true},
		{"another client's stall", []*event{gaveUp, otherStall, view(2100 * ms)}, true},
		{"no fault", []*event{gaveUp, view(2100 * ms)}, true},
	} {
		for _, e := range tc.evs {
			e.Name = "n0"
		}
		bad := judge(&history{Names: []string{"n0"}, Events: tc.evs}, timing{fit: fit, slack: 150 * ms})
		got := strings.Contains(strings.Join(bad, "\n"), "view:")
		if got != tc.want {
			t.Errorf("%s: violations %q, want a view violation: %v", tc.what, bad, tc.want)
		}
	}
}
