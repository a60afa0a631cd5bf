package check

import (
	"testing"
	"time"

	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

var electParams = func() Params { p := params; p.Election = true; return p }()

// leaderEnd adds a leader-end event (times in ms; deadline 0: honours none).
func (h *b) leaderEnd(client, owner string, term uint64, elected, at, deadline int64, cause string) *b {
	return h.add(history.Event{Kind: history.KindLeaderEnd, Client: client, Name: "n", Owner: owner, Token: term,
		Invoke: elected * ms, At: at * ms, Deadline: deadline * ms, Cause: cause})
}

// handover: a resigns at 500, b is elected at 502 and resigns at 1500, c
// is elected at 1502.
func handover() *b {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900).leaderEnd("a", "oa", 10, 1, 500, 900, "resigned").release("oa", 500)
	h.grant("b", "ob", 11, 2, 502, 1400)
	h.add(history.Event{Kind: history.KindValidity, Owner: "ob", At: 800 * ms, Deadline: 1700 * ms})
	h.leaderEnd("b", "ob", 11, 502, 1500, 1700, "resigned").release("ob", 1500)
	h.grant("c", "oc", 12, 3, 1502, 2400).leaderEnd("c", "oc", 12, 1502, 2000, 2400, "resigned").release("oc", 2000)
	return h
}

func TestElectionHandoverPasses(t *testing.T) {
	r := Run(handover().ev, electParams)
	if len(r.Leaderships) != 3 || len(r.LeaderOverlaps) != 0 || r.TermInversions != 0 || r.Unended != 0 {
		t.Fatalf("leaderships %d overlaps %+v inversions %d unended %d", len(r.Leaderships), r.LeaderOverlaps, r.TermInversions, r.Unended)
	}
	if l := r.Leaderships[1]; l.End != 1500*ms || l.Term != 11 {
		t.Fatalf("b's window: %+v", l)
	}
	// Without Election the checks are off.
	if r := Run(handover().ev, params); r.Leaderships != nil {
		t.Fatal("election checks ran without Params.Election")
	}
}

// A leader that saw its Context end late (it was stopped, or its timer
// fired late) but whose deadline passed before the next election does not
// overlap: it honours its deadline (local validity deadline semantics).
func TestElectionDeadlineBoundsLeadership(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.add(history.Event{Kind: history.KindLoss, Owner: "oa", At: 1500 * ms, Deadline: 900 * ms})
	h.grant("b", "ob", 11, 2, 1000, 1900)
	h.leaderEnd("a", "oa", 10, 1, 1500, 900, "lost: expired")
	h.leaderEnd("b", "ob", 11, 1000, 1200, 1900, "resigned")
	r := Run(h.ev, electParams)
	if len(r.LeaderOverlaps) != 0 || r.Leaderships[0].End != 900*ms {
		t.Fatalf("overlaps %+v, a: %+v", r.LeaderOverlaps, r.Leaderships[0])
	}
	// The same leader ignoring its loss signal (no deadline honoured)
	// overlaps b by 200 ms.
	h = &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.ev[0].Detail = client.ImplIgnoreLoss
	h.grant("b", "ob", 11, 2, 1000, 1900)
	h.leaderEnd("a", "oa", 10, 1, 1200, 0, "lost: expired, acted 300ms past it")
	h.leaderEnd("b", "ob", 11, 1000, 1500, 1900, "resigned")
	r = Run(h.ev, electParams)
	if len(r.LeaderOverlaps) != 1 || r.LeaderOverlaps[0].Duration != 200*time.Millisecond {
		t.Fatalf("overlap not detected: %+v", r.LeaderOverlaps)
	}
}

// A killed leader stops at its kill (it records no end); a leader still
// acting when the next is elected overlaps.
func TestElectionKilledAndOverlappingLeaders(t *testing.T) {
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900)
	h.add(history.Event{Kind: history.KindClientExit, Client: "a", At: 300 * ms, Detail: "SIGKILL"})
	h.grant("b", "ob", 11, 2, 1000, 1900).leaderEnd("b", "ob", 11, 1000, 1900, 1900, "lost: expired")
	r := Run(h.ev, electParams)
	if len(r.LeaderOverlaps) != 0 || !r.Leaderships[0].Killed || r.Leaderships[0].End != 300*ms {
		t.Fatalf("overlaps %+v, a: %+v", r.LeaderOverlaps, r.Leaderships[0])
	}
	// c elected at 1500 while b's deadline (1900) had not passed and b had
	// not stopped: overlap.
	h.grant("c", "oc", 12, 3, 1500, 2400).leaderEnd("c", "oc", 12, 1500, 2000, 2400, "resigned")
	r = Run(h.ev, electParams)
	if len(r.LeaderOverlaps) != 1 || r.LeaderOverlaps[0].A.Owner != "ob" || r.LeaderOverlaps[0].B.Owner != "oc" {
		t.Fatalf("overlap not detected: %+v", r.LeaderOverlaps)
	}
}

func TestElectionTermInversionDetected(t *testing.T) {
	h := handover()
	h.ev[len(h.ev)-3].Token = 11 // c's grant: the term b had
	r := Run(h.ev, electParams)
	if r.TermInversions != 1 {
		t.Fatalf("term inversions %d", r.TermInversions)
	}
}

// A deposed leader's write after its window is counted, with the fence's
// answer.
func TestElectionDeposedWrites(t *testing.T) {
	s0 := client.State{}
	s1 := s0.With("11:b-1")
	h := &b{}
	h.grant("a", "oa", 10, 0, 1, 900).leaderEnd("a", "oa", 10, 1, 1500, 900, "lost: expired")
	h.grant("b", "ob", 11, 2, 1000, 1900).rmw("b", "ob", 11, 1100, s0, s1, "11:b-1", history.Accepted)
	h.leaderEnd("b", "ob", 11, 1000, 1300, 1900, "resigned")
	h.add(history.Event{Kind: history.KindWrite, Client: "a", Name: "n", Owner: "oa", Token: 10, Res: history.Fenced,
		Invoke: 1400 * ms, Complete: 1401 * ms, Result: history.Rejected, Add: "10:a-1"})
	h.add(history.Event{Kind: history.KindWrite, Client: "a", Name: "n", Owner: "oa", Token: 10, Res: history.Control,
		Invoke: 1400 * ms, Complete: 1401 * ms, Result: history.Accepted, Add: "10:a-1"})
	r := Run(h.ev, electParams)
	want := Deposed{Fenced: 1, FencedRejected: 1, Control: 1, ControlAccepted: 1}
	if r.Deposed != want || len(r.LeaderOverlaps) != 0 {
		t.Fatalf("deposed %+v overlaps %+v", r.Deposed, r.LeaderOverlaps)
	}
}
