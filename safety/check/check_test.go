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
	if r.Superseded != 0 {
		t.Fatalf("superseded applies in the clean history: %d", r.Superseded)
	}
}

// TestSupersededApplyDetected: the tokens went backwards (a failover to a
// stale replica): b is granted after a, with a lower token; the resource
// refuses b's read (RefusedNewer) and accepts a's later write
// (Superseded). By tokens nothing is stale (I2 finds nothing); by the
// order of grants a's write is, and I3 sees the inversion. The same history with b's token above a's, b's read
// accepted and a's write refused, is clean.
func TestSupersededApplyDetected(t *testing.T) {
	s0 := client.State{}
	s1 := s0.With("30:a-1")
	s2 := s1.With("30:a-2")
	build := func(tokenB uint64, readB, writeA string) *b {
		h := &b{}
		h.grant("a", "oa", 30, 0, 1, 900).rmw("a", "oa", 30, 2, s0, s1, "30:a-1", history.Accepted)
		h.grant("b", "ob", tokenB, 100, 101, 1000)
		h.add(history.Event{Kind: history.KindRead, Client: "b", Name: "n", Owner: "ob", Token: tokenB, Res: history.Fenced,
			Invoke: 110 * ms, Complete: 111 * ms, Result: readB, Value: s1.Digest()})
		h.add(history.Event{Kind: history.KindWrite, Client: "a", Name: "n", Owner: "oa", Token: 30, Res: history.Fenced,
			Invoke: 120 * ms, Complete: 121 * ms, Result: writeA, Value: s2.Digest(), Add: "30:a-2"})
		return h
	}
	r := Run(build(20, history.Rejected, history.Accepted).final(s2).ev, params)
	if r.Superseded != 1 || r.RefusedNewer != 1 || r.StaleFenced != 0 || r.TokenInversions != 1 {
		t.Fatalf("superseded %d, refused newer %d, stale %d, inversions %d; want 1, 1, 0, 1", r.Superseded, r.RefusedNewer, r.StaleFenced, r.TokenInversions)
	}
	r = Run(build(40, history.Accepted, history.Rejected).final(s1).ev, params)
	if r.Superseded != 0 || r.RefusedNewer != 0 || r.StaleFenced != 0 || r.TokenInversions != 0 {
		t.Fatalf("tokens in order: superseded %d, refused newer %d, stale %d, inversions %d; want 0", r.Superseded, r.RefusedNewer, r.StaleFenced, r.TokenInversions)
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

// wait adds a waiting call of client with policy, started at invoke with a
// budget until budgetEnd; done adds its outcome (ok: granted as owner, at
// complete, valid until deadline; else given up).
func (h *b) wait(client, policy string, invoke, budgetEnd int64) *b {
	return h.add(history.Event{Kind: history.KindWait, Client: client, Name: "n", Invoke: invoke * ms, Deadline: budgetEnd * ms, Policy: policy})
}

func (h *b) done(client, policy string, invoke, complete int64, ok bool, owner string, token uint64, deadline int64) *b {
	e := history.Event{Kind: history.KindAcquire, Client: client, Name: "n", Invoke: invoke * ms, Complete: complete * ms, Policy: policy, Detail: client0Impl}
	if ok {
		e.Result, e.Owner, e.Token, e.Deadline = history.OK, owner, token, deadline*ms
	} else {
		e.Result = history.Fail
	}
	return h.add(e)
}

// fairRound: a, b and c (fair) start 100 ms apart while x holds the lock,
// and are granted in that order, each holding 200 ms; d (default policy)
// starts last and is granted before c, which the fair order allows.
func fairRound() *b {
	h := &b{}
	h.add(history.Event{Kind: history.KindRunStart, At: 0})
	h.grant("x", "ox", 1, 0, 1, 900).release("ox", 400)
	h.wait("a", history.PolicyFair, 100, 5000).wait("b", history.PolicyFair, 200, 5000)
	h.wait("c", history.PolicyFair, 300, 5000).wait("d", history.PolicyDefault, 350, 5000)
	h.done("a", history.PolicyFair, 100, 402, true, "oa", 2, 1300).release("oa", 600)
	h.done("b", history.PolicyFair, 200, 602, true, "ob", 3, 1500).release("ob", 800)
	h.done("d", history.PolicyDefault, 350, 802, true, "od", 4, 1700).release("od", 1000)
	h.done("c", history.PolicyFair, 300, 1002, true, "oc", 5, 1900).release("oc", 1200)
	h.add(history.Event{Kind: history.KindRunEnd, At: 1300 * ms})
	return h
}

func TestFairOrderPasses(t *testing.T) {
	r := Run(fairRound().ev, params)
	if r.Calls != 4 || len(r.OutOfOrder) != 0 || r.OrderPairs != 3 || r.OrderExcluded != 0 {
		t.Fatalf("calls %d out of order %+v pairs %d excluded %d", r.Calls, r.OutOfOrder, r.OrderPairs, r.OrderExcluded)
	}
	if r.FreeOver != 0 || r.LongestFree > 5*time.Millisecond {
		t.Fatalf("liveness: longest free %v, over %d", r.LongestFree, r.FreeOver)
	}
}

func TestFairOrderViolationDetected(t *testing.T) {
	// b started 100 ms after a and is granted first.
	h := &b{}
	h.grant("x", "ox", 1, 0, 1, 900).release("ox", 400)
	h.wait("a", history.PolicyFair, 100, 5000).wait("b", history.PolicyFair, 200, 5000)
	h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 600)
	h.done("a", history.PolicyFair, 100, 602, true, "oa", 3, 1500).release("oa", 800)
	r := Run(h.ev, params)
	if len(r.OutOfOrder) != 1 || r.OutOfOrder[0].Earlier.Client != "a" || r.OutOfOrder[0].Later.Client != "b" ||
		r.OutOfOrder[0].Lead != 100*time.Millisecond {
		t.Fatalf("out of order: %+v", r.OutOfOrder)
	}
	// a gave up (its budget ended) after b was granted: still overtaken.
	h = &b{}
	h.grant("x", "ox", 1, 0, 1, 900).release("ox", 400)
	h.wait("a", history.PolicyFair, 100, 700).wait("b", history.PolicyFair, 200, 5000)
	h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 1000)
	h.done("a", history.PolicyFair, 100, 710, false, "", 0, 0)
	if r := Run(h.ev, params); len(r.OutOfOrder) != 1 {
		t.Fatalf("overtaken call that gave up: %+v", r.OutOfOrder)
	}
	// A killed waiter (no completion) overtaken before it died.
	h = &b{}
	h.grant("x", "ox", 1, 0, 1, 900).release("ox", 400)
	h.wait("a", history.PolicyFair, 100, 5000).wait("b", history.PolicyFair, 200, 5000)
	h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 600)
	h.add(history.Event{Kind: history.KindClientExit, Client: "a", At: 500 * ms})
	if r := Run(h.ev, params); len(r.OutOfOrder) != 1 {
		t.Fatalf("killed waiter overtaken while alive: %+v", r.OutOfOrder)
	}
}

func TestFairOrderNotViolated(t *testing.T) {
	base := func() *b {
		h := &b{}
		h.grant("x", "ox", 1, 0, 1, 900).release("ox", 400)
		return h
	}
	cases := map[string]func(h *b){
		// Started within the margin (50 ms) of each other: either order.
		"within margin": func(h *b) {
			h.wait("a", history.PolicyFair, 100, 5000).wait("b", history.PolicyFair, 140, 5000)
			h.done("b", history.PolicyFair, 140, 402, true, "ob", 2, 1300).release("ob", 600)
			h.done("a", history.PolicyFair, 100, 602, true, "oa", 3, 1500).release("oa", 800)
		},
		// a gave up before b was granted.
		"gave up first": func(h *b) {
			h.wait("a", history.PolicyFair, 100, 300).wait("b", history.PolicyFair, 200, 5000)
			h.done("a", history.PolicyFair, 100, 301, false, "", 0, 0)
			h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 600)
		},
		// a was killed before b was granted.
		"killed first": func(h *b) {
			h.wait("a", history.PolicyFair, 100, 5000).wait("b", history.PolicyFair, 200, 5000)
			h.add(history.Event{Kind: history.KindClientExit, Client: "a", At: 300 * ms})
			h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 600)
		},
		// a is the default-policy client: not in the fair order.
		"default policy": func(h *b) {
			h.wait("a", history.PolicyDefault, 100, 5000).wait("b", history.PolicyFair, 200, 5000)
			h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 600)
			h.done("a", history.PolicyDefault, 100, 602, true, "oa", 3, 1500).release("oa", 800)
		},
	}
	for name, f := range cases {
		h := base()
		f(h)
		if r := Run(h.ev, params); len(r.OutOfOrder) != 0 {
			t.Errorf("%s: %+v", name, r.OutOfOrder)
		}
	}
	// Excluded: a was stopped while waiting, or the queue was lost.
	for _, f := range []history.Event{
		{Kind: history.KindFault, Class: ClassStopHeadWaiter, Target: "a", Start: 150 * ms, End: 350 * ms},
		{Kind: history.KindFault, Class: ClassRestartQueue, Target: "node0", Start: 300 * ms, End: 310 * ms},
	} {
		h := base()
		h.wait("a", history.PolicyFair, 100, 5000).wait("b", history.PolicyFair, 200, 5000)
		h.add(f)
		h.done("b", history.PolicyFair, 200, 402, true, "ob", 2, 1300).release("ob", 600)
		h.done("a", history.PolicyFair, 100, 602, true, "oa", 3, 1500).release("oa", 800)
		if r := Run(h.ev, params); len(r.OutOfOrder) != 0 || r.OrderExcluded != 1 || r.OrderPairs != 0 {
			t.Errorf("fault class %d: out of order %+v, excluded %d, pairs %d", f.Class, r.OutOfOrder, r.OrderExcluded, r.OrderPairs)
		}
	}
}

func TestLivenessDetected(t *testing.T) {
	// a waits from 100 ms; the holder released at 400 ms and nobody got
	// the lock until a's grant at 6 s: free for 5.6 s while a waited.
	h := &b{}
	h.add(history.Event{Kind: history.KindRunStart, At: 0})
	h.grant("x", "ox", 1, 0, 1, 900).release("ox", 400)
	h.wait("a", history.PolicyFair, 100, 9000)
	h.done("a", history.PolicyFair, 100, 6000, true, "oa", 2, 6900).release("oa", 6500)
	h.add(history.Event{Kind: history.KindRunEnd, At: 8000 * ms})
	r := Run(h.ev, params)
	if r.FreeOver != 1 || r.LongestFree != 5600*time.Millisecond {
		t.Fatalf("longest free %v, over %d", r.LongestFree, r.FreeOver)
	}
	// The same while a was stopped for most of it: a stopped waiter is
	// not a live one (free while live: 400-1000 ms and 5.5-6 s).
	h.add(history.Event{Kind: history.KindFault, Class: ClassStopHeadWaiter, Target: "a", Start: 1000 * ms, End: 5500 * ms})
	r = Run(h.ev, params)
	if r.FreeOver != 0 || r.LongestFree != 600*time.Millisecond {
		t.Fatalf("stopped waiter: longest free %v, over %d", r.LongestFree, r.FreeOver)
	}
	// A waiter that never completes (killed) waits until its exit.
	h = &b{}
	h.add(history.Event{Kind: history.KindRunStart, At: 0})
	h.wait("a", history.PolicyFair, 100, 9000)
	h.add(history.Event{Kind: history.KindClientExit, Client: "a", At: 5000 * ms})
	h.add(history.Event{Kind: history.KindRunEnd, At: 8000 * ms})
	if r := Run(h.ev, params); r.FreeOver != 1 || r.LongestFree != 4900*time.Millisecond {
		t.Fatalf("killed waiter: longest free %v, over %d", r.LongestFree, r.FreeOver)
	}
}

func TestQueueRecoveryBound(t *testing.T) {
	// A heal followed by a grant 2.1 s later is slow by ttl + backoff and
	// fine by the queue scenarios' bound.
	h := &b{}
	h.add(history.Event{Kind: history.KindRunStart, At: 0})
	h.add(history.Event{Kind: history.KindFault, Class: 15, Start: 100 * ms, End: 100 * ms})
	h.grant("c", "oc", 30, 1400, 2200, 3100).release("oc", 2300)
	h.add(history.Event{Kind: history.KindRunEnd, At: 5000 * ms})
	if r := Run(h.ev, params); r.Slow != 1 {
		t.Fatalf("slow %d", r.Slow)
	}
	p := params
	p.RecoveryBound = QueueBound
	if r := Run(h.ev, p); r.Slow != 0 {
		t.Fatalf("queue bound: slow %d", r.Slow)
	}
}

// TestDeadClientsApplyIsUnknown: a client killed after it sent a fenced
// write but before it recorded the answer leaves only the write's begin
// (history.KindApplyBegin); the resource applied the write, and a later
// read returns its value. The check takes the begun write as one of
// unknown outcome, so the history is linearizable; without the begin (the
// history the lab kept before), the read's value came from nowhere.
func TestDeadClientsApplyIsUnknown(t *testing.T) {
	s0 := client.State{}
	s1 := s0.With("10:a-1")
	read := history.Event{Kind: history.KindRead, Client: "b", Name: "n", Owner: "ob", Token: 20, Res: history.Fenced,
		Invoke: 10 * ms, Complete: 11 * ms, Result: history.Accepted, Value: s1.Digest()}
	begin := history.Event{Kind: history.KindApplyBegin, Detail: history.KindWrite, Client: "a", Name: "n", Owner: "oa", Token: 10,
		Res: history.Fenced, Invoke: 2 * ms, Value: s1.Digest(), Add: "10:a-1"}
	with := &b{}
	with.add(begin).add(read)
	if r := Run(with.ev, params); r.Linearizable != "ok" {
		t.Fatalf("I5 with the begun write: %s", r.Linearizable)
	}
	without := &b{}
	without.add(read)
	if r := Run(without.ev, params); r.Linearizable != "violation" {
		t.Fatalf("I5 without the begun write: %s, want violation", r.Linearizable)
	}
	// A begin whose apply was recorded is that apply, not a second one.
	write := begin
	write.Kind, write.Detail, write.Result, write.Complete = history.KindWrite, "", history.Rejected, 3*ms
	done := &b{}
	done.add(begin).add(write).add(read)
	if r := Run(done.ev, params); r.Linearizable != "violation" {
		t.Fatalf("I5 with the write recorded rejected: %s, want violation", r.Linearizable)
	}
}

// TestClientLagLeavesOutStoppedClients: the worst scheduling delay the
// clients recorded on exit is the run's, except a client a fault targeted
// (the lab stopped it: its probe measured the stop).
func TestClientLagLeavesOutStoppedClients(t *testing.T) {
	h := clean()
	h.add(history.Event{Kind: history.KindClientExit, Client: "a", At: 4000 * ms, Lag: int64(3 * time.Second)})
	h.add(history.Event{Kind: history.KindClientExit, Client: "b", At: 4000 * ms, Lag: int64(40 * time.Millisecond)})
	if r := Run(h.ev, params); r.ClientLag != 3*time.Second {
		t.Fatalf("client lag %v, want a's 3s", r.ClientLag)
	}
	h.add(history.Event{Kind: history.KindFault, Class: 1, Target: "a", Start: 500 * ms, End: 3500 * ms})
	if r := Run(h.ev, params); r.ClientLag != 40*time.Millisecond {
		t.Fatalf("client lag %v with a stopped, want b's 40ms", r.ClientLag)
	}
}

// TestServerLagLeavesOutFaultedServers: the slowest answer the lab's
// server probe counted is the run's, except one whose request met a fault
// on that server (its Target, or one of its Servers) or the heal margin
// after it: a stopped or restarting server answers late because of the
// fault, not the machine.
func TestServerLagLeavesOutFaultedServers(t *testing.T) {
	h := clean()
	answer := func(server string, invoke, took int64) {
		h.add(history.Event{Kind: history.KindServerLag, Target: server, At: (invoke + took + 50) * ms,
			Invoke: invoke * ms, Complete: (invoke + took) * ms, Lag: took * ms, Detail: "25 pings, 0 failed"})
	}
	want := func(lag int64, server, when string) {
		t.Helper()
		r := Run(h.ev, params)
		if r.ServerLag != time.Duration(lag*ms) || r.SlowServer != server {
			t.Fatalf("%s: server lag %v (%q), want %v (%q)", when, r.ServerLag, r.SlowServer, time.Duration(lag*ms), server)
		}
		if r.ClientLag != 0 {
			t.Fatalf("%s: client lag %v from server answers", when, r.ClientLag)
		}
	}
	want(0, "", "no probe")
	answer("node0", 1000, 2)
	answer("node1", 1000, 1)
	answer("resource", 1500, 0) // a window without a counted answer
	want(2, "node0", "quiet")
	answer("node1", 2000, 150)
	want(150, "node1", "a slow answer, no fault")
	// node0 stopped from 3100 to 3800: its answer came at the resume.
	answer("node0", 3000, 900)
	want(900, "node0", "node0 stopped, the fault not recorded")
	h.add(history.Event{Kind: history.KindFault, Class: 7, Target: "node0", Start: 3100 * ms, End: 3800 * ms, Detail: "SIGSTOP 700ms"})
	want(150, "node1", "node0 stopped")
	// nodes 1 and 2 stopped from 6000 to 6500 (Target names neither
	// alone): node2's answer 100 ms after the heal is the fault's, 400 ms
	// after it the machine's; node1's earlier slow answer still counts.
	h.add(history.Event{Kind: history.KindFault, Class: 6, Target: "nodes [1 2]", Servers: []string{"node1", "node2"}, Start: 6000 * ms, End: 6500 * ms, Detail: "SIGSTOP"})
	answer("node2", 6600, 400)
	want(150, "node1", "node2 catching up after its heal")
	answer("node2", 6900, 200)
	want(200, "node2", "node2 past the heal margin")
}
