package check

import (
	"testing"
	"time"

	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// The checks are themselves tested on small hand-written histories: each
// invariant must pass a correct history and catch its own violation.

const ms = int64(time.Millisecond)

var params = Params{TTL: time.Second, SignalTolerance: 5 * time.Millisecond, Backoff: 500 * time.Millisecond, LinearizeTimeout: 5 * time.Second}

// b builds a history.
type b struct{ ev []history.Event }

func (h *b) grant(client, owner string, token uint64, invoke, complete, deadline int64) *b {
	h.ev = append(h.ev, history.Event{Kind: history.KindAcquire, Client: client, Name: "n", Owner: owner, Token: token,
		Invoke: invoke * ms, Complete: complete * ms, Deadline: deadline * ms, Result: history.OK, Detail: client0Impl})
	return h
}

const client0Impl = client.ImplLibrary

func (h *b) release(owner string, at int64) *b {
	h.ev = append(h.ev, history.Event{Kind: history.KindRelease, Owner: owner, Invoke: at * ms, Complete: at*ms + 1, Result: history.OK})
	return h
}

// rmw adds a fenced read and write (and the same on the control) by owner
// with token, from state from to state to, the write adding elem.
func (h *b) rmw(client, owner string, token uint64, at int64, from, to client.State, elem string, writeResult string) *b {
	for _, res := range []string{history.Fenced, history.Control} {
		h.ev = append(h.ev,
			history.Event{Kind: history.KindRead, Client: client, Name: "n", Owner: owner, Token: token, Res: res,
				Invoke: at * ms, Complete: at*ms + 1, Result: history.Accepted, Value: from.Digest()},
			history.Event{Kind: history.KindWrite, Client: client, Name: "n", Owner: owner, Token: token, Res: res,
				Invoke: (at + 1) * ms, Complete: (at+1)*ms + 1, Result: writeResult, Value: to.Digest(), Add: elem})
	}
	return h
}

func (h *b) final(s client.State) *b {
	for _, res := range []string{history.Fenced, history.Control} {
		h.ev = append(h.ev, history.Event{Kind: history.KindFinal, Res: res, Counter: s.Counter, Set: s.Elements()})
	}
	return h
}

func (h *b) add(e history.Event) *b { h.ev = append(h.ev, e); return h }

// clean is a correct history: two grants one after the other.
func clean() *b {
	s0 := client.State{}
	s1 := s0.With("10:a-1")
	s2 := s1.With("20:b-1")
	h := &b{}
	h.add(history.Event{Kind: history.KindRunStart, At: 0})
	h.grant("a", "oa", 10, 0, 1, 900).rmw("a", "oa", 10, 2, s0, s1, "10:a-1", history.Accepted).release("oa", 10)
	h.grant("b", "ob", 20, 5, 11, 911).rmw("b", "ob", 20, 12, s1, s2, "20:b-1", history.Accepted).release("ob", 20)
	h.add(history.Event{Kind: history.KindRunEnd, At: 5000 * ms})
	return h.final(s2)
}

func TestCleanHistoryPasses(t *testing.T) {
	r := Run(clean().ev, params)
	if len(r.Overlaps) != 0 || r.StaleFenced != 0 || r.StaleControl != 0 || r.TokenInversions != 0 ||
		r.LostFenced != 0 || r.LostControl != 0 || r.Linearizable != "ok" || r.Late != 0 || r.Slow != 0 {
		t.Fatalf("clean history: %+v", r)
	}
	if r.Grants.OK != 2 || r.AckFenced != 2 {
		t.Fatalf("counts: %+v", r)
	}
}

func TestOverlapDetected(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900).release("oa", 500)
	h.grant("b", "ob", 20, 5, 400, 1300).release("ob", 1000)
	r := Run(h.ev, params)
	if len(r.Overlaps) != 1 || r.Overlaps[0].Duration != 100*time.Millisecond {
		t.Fatalf("overlaps %+v", r.Overlaps)
	}
	// A renewal that extended a's window later overlaps too; a loss
	// signal cuts it.
	h = &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.add(history.Event{Kind: history.KindValidity, Owner: "oa", At: 300 * ms, Deadline: 1200 * ms})
	h.add(history.Event{Kind: history.KindLoss, Owner: "oa", At: 950 * ms, Deadline: 1200 * ms})
	h.grant("b", "ob", 20, 5, 1000, 2000)
	if r := Run(h.ev, params); len(r.Overlaps) != 0 {
		t.Fatalf("window cut by the loss signal still overlaps: %+v", r.Overlaps)
	}
}

func TestStaleWriteDetected(t *testing.T) {
	// b (token 20) wrote; then a (token 10) writes and is accepted.
	s0 := client.State{}
	s1 := s0.With("20:b-1")
	s2 := s0.With("10:a-1")
	h := &b{}
	h.grant("b", "ob", 20, 0, 1, 900).rmw("b", "ob", 20, 2, s0, s1, "20:b-1", history.Accepted)
	h.rmw("a", "oa", 10, 10, s0, s2, "10:a-1", history.Accepted)
	h.final(s2)
	r := Run(h.ev, params)
	if r.StaleFenced == 0 || r.StaleControl == 0 {
		t.Fatalf("stale write not detected: fenced %d control %d", r.StaleFenced, r.StaleControl)
	}
	if r.LostFenced != 1 || r.LostControl != 1 {
		t.Fatalf("lost update not detected: %d %d", r.LostFenced, r.LostControl)
	}
	if r.Linearizable != "violation" {
		t.Fatalf("I5: %s", r.Linearizable)
	}
}

func TestRejectedStaleWriteIsFine(t *testing.T) {
	s0 := client.State{}
	s1 := s0.With("20:b-1")
	h := &b{}
	h.grant("b", "ob", 20, 0, 1, 900).rmw("b", "ob", 20, 2, s0, s1, "20:b-1", history.Accepted)
	h.add(history.Event{Kind: history.KindWrite, Client: "a", Name: "n", Owner: "oa", Token: 10, Res: history.Fenced,
		Invoke: 10 * ms, Complete: 11 * ms, Result: history.Rejected, Value: s0.With("10:a-1").Digest(), Add: "10:a-1"})
	// An unknown write that never landed is fine too.
	h.add(history.Event{Kind: history.KindWrite, Client: "c", Name: "n", Owner: "oc", Token: 5, Res: history.Fenced,
		Invoke: 12 * ms, Result: history.Unknown, Value: s0.With("5:c-1").Digest(), Add: "5:c-1"})
	h.final(s1)
	r := Run(h.ev, params)
	if r.StaleFenced != 0 || r.LostFenced != 0 || r.Linearizable != "ok" {
		t.Fatalf("%+v", r)
	}
}

func TestReadOfWrongValueIsNotLinearizable(t *testing.T) {
	s0 := client.State{}
	s1 := s0.With("20:b-1")
	h := &b{}
	h.rmw("b", "ob", 20, 2, s0, s1, "20:b-1", history.Accepted)
	// c reads the initial value after b's write completed.
	h.add(history.Event{Kind: history.KindRead, Client: "c", Name: "n", Owner: "oc", Token: 30, Res: history.Fenced,
		Invoke: 10 * ms, Complete: 11 * ms, Result: history.Accepted, Value: s0.Digest()})
	dir := t.TempDir()
	p := params
	p.VisualizePath = dir + "/v.html"
	r := Run(h.ev, p)
	if r.Linearizable != "violation" || r.Visualization == "" {
		t.Fatalf("I5: %s %q", r.Linearizable, r.Visualization)
	}
}

func TestTokenInversionDetected(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 20, 0, 1, 900).release("oa", 10)
	h.grant("b", "ob", 15, 20, 21, 920).release("ob", 30)
	if r := Run(h.ev, params); r.TokenInversions != 1 {
		t.Fatalf("inversions %d", r.TokenInversions)
	}
}

func TestLateSignalDetected(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.add(history.Event{Kind: history.KindLoss, Client: "a", Owner: "oa", At: 960 * ms, Deadline: 900 * ms})
	r := Run(h.ev, params)
	if r.Late != 1 || len(r.Lags) != 1 || r.Lags[0] != 60*time.Millisecond {
		t.Fatalf("late %d lags %v", r.Late, r.Lags)
	}
	// A check that found the lease valid after its deadline is late too.
	h = &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.add(history.Event{Kind: history.KindChecked, Client: "a", Owner: "oa", At: 1000 * ms, Deadline: 900 * ms})
	if r := Run(h.ev, params); r.Late != 1 {
		t.Fatalf("late check: %d", r.Late)
	}
	// A stopped holder is excluded.
	h.add(history.Event{Kind: history.KindFault, Class: 1, Target: "a", Start: 500 * ms, End: 2000 * ms})
	if r := Run(h.ev, params); r.Late != 0 || r.Excluded != 1 {
		t.Fatalf("stopped holder: late %d excluded %d", r.Late, r.Excluded)
	}
}

func TestSlowRecoveryDetected(t *testing.T) {
	h := &b{}
	h.add(history.Event{Kind: history.KindRunStart, At: 0})
	h.grant("a", "oa", 10, 0, 1, 900).release("oa", 100)
	h.add(history.Event{Kind: history.KindFault, Class: 5, Start: 200 * ms, End: 1000 * ms})
	h.grant("b", "ob", 20, 900, 1100, 2000).release("ob", 1200) // 100ms after the heal
	h.add(history.Event{Kind: history.KindFault, Class: 5, Start: 1300 * ms, End: 1500 * ms})
	h.grant("c", "oc", 30, 1400, 3600, 4500).release("oc", 3700) // 2.1s after it
	h.add(history.Event{Kind: history.KindRunEnd, At: 5000 * ms})
	r := Run(h.ev, params)
	if len(r.Recoveries) != 2 || r.Recoveries[0] != 100*time.Millisecond || r.Slow != 1 {
		t.Fatalf("recoveries %v slow %d", r.Recoveries, r.Slow)
	}
}
