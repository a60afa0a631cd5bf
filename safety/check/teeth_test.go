package check

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// These tests kill the mutants of mutants_test.go that the scenarios of
// check_test.go let through: each builds the smallest history on which
// the rule a mutant breaks decides the answer.

// apply adds one fenced apply (times in ms).
func (h *b) apply(kind, client, owner string, token uint64, invoke, complete int64, result string, value, add string) *b {
	return h.add(history.Event{Kind: kind, Client: client, Name: "n", Owner: owner, Token: token, Res: history.Fenced,
		Invoke: invoke * ms, Complete: complete * ms, Result: result, Value: value, Add: add})
}

// A renewal the holder saw extends its window (I1-renewals).
func TestRenewalExtendsWindow(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.add(history.Event{Kind: history.KindValidity, Owner: "oa", At: 300 * ms, Deadline: 1200 * ms})
	h.grant("b", "ob", 20, 5, 1000, 2000)
	if r := Run(h.ev, params); len(r.Overlaps) != 1 || r.Overlaps[0].Duration != 200*time.Millisecond {
		t.Fatalf("overlaps %+v, want one of 200ms", r.Overlaps)
	}
}

// An equal token from another holder, as a Sentinel failover to a replica
// that missed a grant gives: the second grant is an inversion (I3-tie),
// its read and the first holder's later write are stale (I2-tie) and not
// linearizable (I5-tie); a refusal of the newer holder's apply is counted
// (I2-refused-newer-tie).
func TestEqualTokenOfAnotherHolder(t *testing.T) {
	s0 := client.State{}
	s1 := s0.With("30:a-1")
	s2 := s1.With("30:a-2")
	build := func(readB string) *b {
		h := &b{}
		h.grant("a", "oa", 30, 0, 1, 900).rmw("a", "oa", 30, 2, s0, s1, "30:a-1", history.Accepted)
		h.grant("b", "ob", 30, 100, 101, 1000)
		h.apply(history.KindRead, "b", "ob", 30, 110, 111, readB, s1.Digest(), "")
		h.apply(history.KindWrite, "a", "oa", 30, 120, 121, history.Accepted, s2.Digest(), "30:a-2")
		return h.final(s2)
	}
	r := Run(build(history.Accepted).ev, params)
	if r.TokenInversions != 1 || r.StaleFenced != 1 || r.Linearizable != "violation" {
		t.Fatalf("inversions %d, stale %d, I5 %s; want 1, 1, violation", r.TokenInversions, r.StaleFenced, r.Linearizable)
	}
	if r := Run(build(history.Rejected).ev, params); r.RefusedNewer != 1 || r.Superseded != 1 {
		t.Fatalf("refused newer %d, superseded %d; want 1, 1", r.RefusedNewer, r.Superseded)
	}
}

// An accepted fenced read raises the mark like a write: an older token's
// write accepted after it is stale (I2-reads).
func TestStaleAfterRead(t *testing.T) {
	s0 := client.State{}
	h := &b{}
	h.apply(history.KindRead, "b", "ob", 20, 0, 1, history.Accepted, s0.Digest(), "")
	h.apply(history.KindWrite, "a", "oa", 10, 10, 11, history.Accepted, s0.With("10:a-1").Digest(), "10:a-1")
	if r := Run(h.final(s0.With("10:a-1")).ev, params); r.StaleFenced != 1 {
		t.Fatalf("stale %d, want 1", r.StaleFenced)
	}
}

// Tokens that decrease along the final set are stale applies, whatever
// the applies recorded (I2-final-order).
func TestFinalSetOrder(t *testing.T) {
	h := &b{}
	h.add(history.Event{Kind: history.KindFinal, Res: history.Fenced, Set: []string{"10:a-1", "20:b-1", "15:c-1"}})
	if r := Run(h.ev, params); r.StaleFenced != 1 {
		t.Fatalf("stale %d, want 1", r.StaleFenced)
	}
}

// Concurrent applies are not ordered: a lower token's write that started
// before a higher token's read completed is not stale (I2-realtime), nor
// is a grant concurrent with a higher-token grant an inversion
// (I3-realtime).
func TestConcurrentIsNotStale(t *testing.T) {
	s1 := client.State{}.With("10:a-1")
	h := &b{}
	h.apply(history.KindRead, "b", "ob", 20, 95, 105, history.Accepted, s1.Digest(), "")
	h.apply(history.KindWrite, "a", "oa", 10, 100, 110, history.Accepted, s1.Digest(), "10:a-1")
	if r := Run(h.final(s1).ev, params); r.StaleFenced != 0 || r.Linearizable != "ok" {
		t.Fatalf("stale %d, I5 %s; want 0, ok", r.StaleFenced, r.Linearizable)
	}
	h = &b{}
	h.grant("a", "oa", 20, 0, 50, 900).grant("b", "ob", 15, 10, 60, 900)
	if r := Run(h.ev, params); r.TokenInversions != 0 {
		t.Fatalf("concurrent grants: inversions %d, want 0", r.TokenInversions)
	}
}

// Every grant is compared with the highest earlier token, not the last
// one (I3-max, I11-max).
func TestInversionAgainstHighest(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 30, 0, 1, 900).grant("b", "ob", 10, 10, 11, 900).grant("c", "oc", 20, 20, 21, 900)
	if r := Run(h.ev, params); r.TokenInversions != 2 {
		t.Fatalf("inversions %d, want 2", r.TokenInversions)
	}
	e := handover()
	e.ev[0].Token = 30 // a's term above b's (11) and c's (12)
	if r := Run(e.ev, electParams); r.TermInversions != 2 {
		t.Fatalf("term inversions %d, want 2", r.TermInversions)
	}
}

// Without the fenced resource's final state, acknowledged adds cannot be
// checked: the history is unjudged, never passed (I2-final-missing);
// neither is one porcupine gave no answer on (I5-timeout-judged).
func TestCannotJudge(t *testing.T) {
	h := clean()
	h.ev = h.ev[:len(h.ev)-2] // the final states
	r := Run(h.ev, params)
	if len(r.Unjudged) != 1 || r.LostFenced != 0 {
		t.Fatalf("no final state: unjudged %q, lost %d", r.Unjudged, r.LostFenced)
	}
	if r := Run(clean().ev, params); len(r.Unjudged) != 0 {
		t.Fatalf("clean history unjudged: %q", r.Unjudged)
	}
	r = Run(clean().ev, params)
	r.Linearizable = Timeout
	if u := unjudged(index(clean().ev), r, params); len(u) != 1 {
		t.Fatalf("porcupine timeout: unjudged %q", u)
	}
	if verdict(porcupine.Unknown) != Timeout || verdict(porcupine.Ok) != "ok" || verdict(porcupine.Illegal) != "violation" {
		t.Fatal("porcupine's answers mapped wrong")
	}
}

// The fenced register refuses only stale applies (I5-refusal), accepts
// no stale one (I5-stale-apply), and lets an unknown write land any time
// after its call (I5-unknown).
func TestRegisterModel(t *testing.T) {
	s0 := client.State{}
	h := &b{}
	h.apply(history.KindWrite, "a", "oa", 10, 0, 1, history.Rejected, s0.With("10:a-1").Digest(), "10:a-1")
	if r := Run(h.ev, params); r.Linearizable != "violation" {
		t.Fatalf("fresh apply refused: I5 %s", r.Linearizable)
	}
	h = &b{}
	h.apply(history.KindWrite, "b", "ob", 20, 0, 1, history.Accepted, s0.With("20:b-1").Digest(), "20:b-1")
	h.apply(history.KindWrite, "a", "oa", 10, 10, 11, history.Accepted, s0.With("10:a-1").Digest(), "10:a-1")
	if r := Run(h.ev, params); r.Linearizable != "violation" {
		t.Fatalf("stale write accepted: I5 %s", r.Linearizable)
	}
	v1 := s0.With("10:a-1")
	h = &b{}
	h.add(history.Event{Kind: history.KindWrite, Client: "a", Name: "n", Owner: "oa", Token: 10, Res: history.Fenced,
		Invoke: 10 * ms, Result: history.Unknown, Value: v1.Digest(), Add: "10:a-1"})
	h.apply(history.KindRead, "a", "oa", 10, 50, 51, history.Accepted, s0.Digest(), "")
	h.apply(history.KindRead, "b", "ob", 20, 100, 101, history.Accepted, v1.Digest(), "")
	if r := Run(h.ev, params); r.Linearizable != "ok" {
		t.Fatalf("unknown write landing late: I5 %s", r.Linearizable)
	}
}

// I6 judges the library's leases only: a lab lease's late signal is not
// counted (I6-library).
func TestLateSignalOfLabLease(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.ev[0].Detail = client.ImplNoValidity
	h.add(history.Event{Kind: history.KindLoss, Client: "a", Owner: "oa", At: 960 * ms, Deadline: 900 * ms})
	if r := Run(h.ev, params); r.Late != 0 || len(r.Lags) != 0 {
		t.Fatalf("lab lease: late %d lags %v", r.Late, r.Lags)
	}
}

// I7: recovery counts from the end of the leases held at the heal
// (I7-held-at-heal); a heal that no grant follows before the run ends is
// slow (I7-no-grant); overlapping faults heal once (I7-merge).
func TestRecoveryRules(t *testing.T) {
	run := func(f func(h *b), end int64) Result {
		h := &b{}
		h.add(history.Event{Kind: history.KindRunStart, At: 0})
		f(h)
		h.add(history.Event{Kind: history.KindRunEnd, At: end * ms})
		return Run(h.ev, params)
	}
	r := run(func(h *b) {
		h.grant("a", "oa", 10, 0, 100, 2800).release("oa", 2700)
		h.add(history.Event{Kind: history.KindFault, Class: 5, Start: 200 * ms, End: 1000 * ms})
		h.grant("b", "ob", 20, 500, 2800, 3700)
	}, 5000)
	if len(r.Recoveries) != 1 || r.Recoveries[0] != 100*time.Millisecond || r.Slow != 0 {
		t.Fatalf("held at the heal: recoveries %v slow %d", r.Recoveries, r.Slow)
	}
	fault := func(h *b) { h.add(history.Event{Kind: history.KindFault, Class: 5, Start: 200 * ms, End: 1000 * ms}) }
	if r := run(fault, 5000); r.Slow != 1 {
		t.Fatalf("no grant after the heal: slow %d", r.Slow)
	}
	if r := run(fault, 1200); r.Slow != 0 || r.Unchecked != 1 {
		t.Fatalf("heal at the end: slow %d unchecked %d", r.Slow, r.Unchecked)
	}
	r = run(func(h *b) {
		h.add(history.Event{Kind: history.KindFault, Class: 5, Start: 200 * ms, End: 1000 * ms})
		h.add(history.Event{Kind: history.KindFault, Class: 7, Start: 800 * ms, End: 2000 * ms})
		h.grant("b", "ob", 20, 500, 2100, 3000)
	}, 5000)
	if len(r.Recoveries) != 1 || r.Recoveries[0] != 100*time.Millisecond {
		t.Fatalf("overlapping faults: recoveries %v", r.Recoveries)
	}
}

// A grant's renewal windows are one holding, counted once (I12-one-window).
func TestRenewedPermitCountedOnce(t *testing.T) {
	evs := []history.Event{
		grantEv("a", "a1", 1, 10, 100, 1, ""),
		{Kind: history.KindValidity, Owner: "a1", At: 50, Deadline: 200},
		grantEv("b", "b1", 2, 60, 200, 1, ""),
	}
	if r := Run(evs, Params{Limit: 2}); len(r.OverLimit) != 0 || r.MaxHeld != 2 {
		t.Fatalf("over %d, max %d; want 0, 2", len(r.OverLimit), r.MaxHeld)
	}
}
