package check

import (
	"sort"
	"time"

	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// The election checks (scenario 17), over the leaderships of the run: each
// grant is a leadership won with Campaign (its token is the term), and the
// leader records when it stopped acting (history.KindLeaderEnd):
//
//	I10  one leader at a time: no two leaderships' windows intersect in
//	     real time. A leadership's window runs from its election (Campaign
//	     returned) to the first of: the moment its leader stopped acting
//	     (its leadership's Done/Context ended as the leader saw it, it
//	     resigned, or it was killed) and the last local validity deadline
//	     it honours. The library's leader honours its deadline: its
//	     Context ends there (I6 measures how late the signal came), and a
//	     leader that acts only under its Context stops then. The negative
//	     control's leader honours its deadline plus the time it goes on
//	     acting after its loss signal (one ttl), and a leader-end whose
//	     Deadline is 0 honours none.
//	I11  terms strictly increase: in the order of election, every
//	     leadership's term is above every earlier one's.
//
// Writes by a leader after its leadership was over (a paused leader's
// after its window, or the control's after its loss) are counted, with
// what the fenced resource and the unfenced control copy did with them; I2
// (stale applies accepted by the fenced resource) covers them. The fence
// may rightly accept one while no newer leader has touched the resource.

// Leadership is one leadership as the history shows it.
type Leadership struct {
	Client, Owner, Impl string
	Term                uint64
	// Elected is when Campaign returned; Stopped when the leader stopped
	// acting (leader-end, or its kill; the last thing it did when neither
	// was recorded, which Unended counts); Deadline the last local
	// validity deadline it honours (0: none); End the window's end.
	Elected, Stopped, Deadline, End int64
	// Over is when the leadership was over by the library's account: the
	// first of End, its loss signal, its resignation and its last local
	// deadline (for the control, before it stopped acting).
	Over   int64
	Cause  string
	Killed bool
}

// LeaderOverlap is a pair of leaderships whose windows intersect (I10).
type LeaderOverlap struct {
	A, B     Leadership
	Duration time.Duration
}

// Deposed counts the resource writes of leaders after their window.
type Deposed struct {
	// Fenced writes attempted, accepted and rejected by the fence.
	Fenced, FencedAccepted, FencedRejected int
	// Control writes that landed (nothing refuses them).
	Control, ControlAccepted int
}

// leaderships builds the run's leaderships.
func leaderships(h *hist) (ls []Leadership, unended int) {
	ends := map[string]history.Event{}
	kills := map[string][]int64{}
	lastAct := map[string]int64{}
	for _, e := range h.events {
		switch e.Kind {
		case history.KindLeaderEnd:
			ends[e.Owner] = e
		case history.KindClientExit:
			if e.Detail == "SIGKILL" {
				kills[e.Client] = append(kills[e.Client], e.At)
			}
		case history.KindChecked:
			lastAct[e.Owner] = max(lastAct[e.Owner], e.At)
		case history.KindRead, history.KindWrite:
			lastAct[e.Owner] = max(lastAct[e.Owner], e.Invoke)
		}
	}
	for _, g := range h.grants {
		l := Leadership{Client: g.Client, Owner: g.Owner, Impl: g.Impl, Term: g.Token, Elected: g.Complete}
		honours := g.Impl == client.ImplLibrary || g.Impl == ""
		if e, ok := ends[g.Owner]; ok {
			l.Stopped, l.Deadline, l.Cause = e.At, e.Deadline, e.Cause
			honours = e.Deadline != 0
		} else {
			for _, k := range kills[g.Client] {
				if k >= g.Complete && (l.Stopped == 0 || k < l.Stopped) {
					l.Stopped, l.Killed, l.Cause = k, true, "killed"
				}
			}
			if !l.Killed {
				unended++
				l.Stopped, l.Cause = max(lastAct[g.Owner], g.Complete), "no end recorded"
			}
			if honours {
				l.Deadline = g.End // the last deadline, cut at a recorded loss or release
			}
		}
		l.End = l.Stopped
		if honours && l.Deadline != 0 {
			l.End = min(l.End, l.Deadline)
		}
		l.Over = l.End
		if g.End > 0 {
			l.Over = min(l.Over, g.End)
		}
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Elected < ls[j].Elected })
	return ls, unended
}

// leaderOverlaps finds the pairs of leaderships whose windows intersect
// (I10); ls is sorted by election.
func leaderOverlaps(ls []Leadership) []LeaderOverlap {
	var out []LeaderOverlap
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if b.Elected >= a.End {
				continue
			}
			if b.Owner == a.Owner {
				continue
			}
			out = append(out, LeaderOverlap{A: a, B: b, Duration: time.Duration(min(a.End, b.End) - b.Elected)})
		}
	}
	return out
}

// termInversions counts leaderships whose term is not above every earlier
// leadership's (I11); ls is sorted by election.
func termInversions(ls []Leadership) int {
	n := 0
	var hw uint64
	for _, l := range ls {
		if l.Term <= hw {
			n++
		}
		hw = max(hw, l.Term)
	}
	return n
}

// deposedWrites counts the writes leaders sent after their leadership was
// over (Over: for a leader that honours its loss signal, its window's end;
// for the control, its loss).
func deposedWrites(h *hist, ls []Leadership) Deposed {
	end := map[string]int64{}
	for _, l := range ls {
		end[l.Owner] = l.Over
	}
	var d Deposed
	for _, res := range []string{history.Fenced, history.Control} {
		for _, e := range h.applies[res] {
			t, ok := end[e.Owner]
			if e.Kind != history.KindWrite || !ok || e.Invoke <= t {
				continue
			}
			if res == history.Fenced {
				d.Fenced++
				switch e.Result {
				case history.Accepted:
					d.FencedAccepted++
				case history.Rejected:
					d.FencedRejected++
				}
			} else {
				d.Control++
				if e.Result == history.Accepted {
					d.ControlAccepted++
				}
			}
		}
	}
	return d
}
