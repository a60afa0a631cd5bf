package check

import (
	"sort"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/safety/history"
)

// The waiter-queue checks (the queue scenarios, single-node mode):
//
//	I8  fair order: a fair call that started more than FairMargin before
//	    another fair call, and stayed alive and waiting, is not granted
//	    after it;
//	I9  liveness: the lock is never free (no holder) for longer than
//	    QueueBound while some live client waits.
//
// Both read the waiting calls of clients with a Policy (history.KindWait,
// and the KindAcquire with the same client and invoke).

// Fault classes the checks treat specially (the lab's scenario ids).
const (
	ClassPauseHolder    = 1  // the target client is SIGSTOPped
	ClassRestartNow     = 8  // the lock node restarts empty
	ClassRestartDelayed = 9  // the lock node restarts empty, later
	ClassKillHeadWaiter = 13 // the target waiter is killed (SIGSTOPped first, in one variant)
	ClassStopHeadWaiter = 14 // the target waiter is SIGSTOPped
	ClassKillWaiters    = 15 // the target waiter (behind the head) is killed
	ClassRestartQueue   = 16 // the lock node restarts empty: its queue is lost
)

// stopsClient reports whether a fault of class stops its target client
// (for some of its window).
func stopsClient(class int) bool {
	return class == ClassPauseHolder || class == ClassKillHeadWaiter || class == ClassStopHeadWaiter
}

// losesQueue reports whether a fault of class loses the lock's queue.
func losesQueue(class int) bool {
	return class == ClassRestartNow || class == ClassRestartDelayed || class == ClassRestartQueue
}

// DefaultFairMargin is I8's margin between two calls' starts. A call's
// start is recorded before its first attempt, which is what enters the
// queue (an arrival ticket in Redis, in the order the scripts run): the
// attempt leaves within microseconds on an idle machine and goes through a
// loopback proxy, but a process or goroutine can be descheduled between
// the start and the send for tens of milliseconds on a loaded 2-core
// machine under -race (I6 allows 40 ms for a timer there). Two calls that
// start less than the margin apart may enter in either order; 50 ms
// leaves room for that and still compares almost every pair of a run
// (waits last hundreds of milliseconds to seconds).
const DefaultFairMargin = 50 * time.Millisecond

// QueueBound is I9's bound on a free lock while a live client waits: the
// worst case is a line of dead waiters at the head. A release reserves the
// lock for a dead (or stopped) fair head for engine.ReserveTTL; nobody
// notices the lapse until the next script that touches the queue, at the
// latest the next heartbeat of a live waiter (every WaiterTTL/3), which
// drops the head and reserves for the next one; every dead waiter is gone
// within distlock.WaiterTTL of its last heartbeat whatever its place.
// Plus 500 ms of slack (wake-up delivery, the acquire's round trip, a
// busy machine). A node restart empties the queue: each waiter learns it
// from its next heartbeat and enters again.
const QueueBound = engine.ReserveTTL + distlock.WaiterTTL + distlock.WaiterTTL/3 + 500*time.Millisecond

// Call is one waiting Acquire call of a client with a waiting policy.
type Call struct {
	Client, Policy string
	Invoke         int64
	// End is when the call stopped waiting: its grant; for a call that
	// gave up, the end of its budget (or its completion, if earlier); for
	// a call with no completion, its process's exit (killed) or the end of
	// the run.
	End      int64
	Granted  bool
	Complete int64 // 0: no completion recorded (killed)
	// Queued is the reply time of the attempt that entered the queue, and
	// Waiter its id in the queue (clients that see the queue only).
	Queued int64
	Waiter string
}

// OrderViolation is a fair call granted while an earlier fair call (started
// more than the margin before it) was alive and still waiting.
type OrderViolation struct {
	Earlier, Later Call
	Lead           time.Duration // how much earlier the earlier call started
}

// calls rebuilds the waiting calls of clients with a policy.
func calls(h *hist) []Call {
	type key struct {
		client string
		invoke int64
	}
	done := map[key]history.Event{}
	exits := map[string][]int64{}
	var queued []history.Event
	for _, e := range h.events {
		switch e.Kind {
		case history.KindAcquire:
			if e.Policy != "" {
				done[key{e.Client, e.Invoke}] = e
			}
		case history.KindClientExit:
			exits[e.Client] = append(exits[e.Client], e.At)
		case history.KindQueued:
			queued = append(queued, e)
		}
	}
	end := h.runEnd
	if end == 0 {
		end = 1<<62 - 1
	}
	var out []Call
	for _, e := range h.events {
		if e.Kind != history.KindWait {
			continue
		}
		c := Call{Client: e.Client, Policy: e.Policy, Invoke: e.Invoke, End: end}
		if d, ok := done[key{e.Client, e.Invoke}]; ok {
			c.Complete = d.Complete
			c.Granted = d.Result == history.OK
			c.End = d.Complete
			if !c.Granted && e.Deadline > c.Invoke && e.Deadline < c.End {
				c.End = e.Deadline
			}
		} else {
			for _, x := range exits[e.Client] {
				if x >= c.Invoke && x < c.End {
					c.End = x
				}
			}
		}
		for _, q := range queued {
			if q.Client == c.Client && q.Invoke >= c.Invoke && q.Invoke <= c.End {
				c.Queued, c.Waiter = q.At, q.Waiter
				break
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Invoke < out[j].Invoke })
	return out
}

// stopWindows returns the windows in which client was stopped (or killed).
func stopWindows(h *hist, client string) [][2]int64 {
	var out [][2]int64
	for _, f := range h.faults {
		if stopsClient(f.Class) && f.Target == client {
			out = append(out, [2]int64{f.Start, max(f.End, f.Start)})
		}
	}
	return out
}

// queueLosses returns the windows in which the lock's queue was lost.
func queueLosses(h *hist) [][2]int64 {
	var out [][2]int64
	for _, f := range h.faults {
		if losesQueue(f.Class) {
			out = append(out, [2]int64{f.Start, max(f.End, f.Start)})
		}
	}
	return out
}

func intersects(ws [][2]int64, from, to int64) bool {
	for _, w := range ws {
		if w[0] <= to && w[1] >= from {
			return true
		}
	}
	return false
}

// fairOrder checks I8 over the fair calls: for every granted call B and
// every fair call A of another client that started more than margin
// before B and was still waiting when B started (a pair), A must not still
// be waiting when B's grant completed. A pair is excluded (not compared)
// when A's client was stopped, or the lock's queue was lost, between A's
// start and B's grant: a stopped waiter misses its reservation and its
// heartbeats and rightly loses its place, and after a lost queue every
// waiter enters again in whatever order its next heartbeat comes.
func fairOrder(cs []Call, h *hist, margin time.Duration) (v []OrderViolation, pairs, excluded int) {
	losses := queueLosses(h)
	stops := map[string][][2]int64{}
	for _, c := range cs {
		if _, ok := stops[c.Client]; !ok {
			stops[c.Client] = stopWindows(h, c.Client)
		}
	}
	for _, b := range cs {
		if !b.Granted || b.Policy != history.PolicyFair {
			continue
		}
		for _, a := range cs {
			if a.Policy != history.PolicyFair || a.Client == b.Client ||
				a.Invoke+int64(margin) >= b.Invoke || a.End <= b.Invoke {
				continue
			}
			if intersects(stops[a.Client], a.Invoke, b.Complete) || intersects(losses, a.Invoke, b.Complete) {
				excluded++
				continue
			}
			pairs++
			if a.End > b.Complete {
				v = append(v, OrderViolation{Earlier: a, Later: b, Lead: time.Duration(b.Invoke - a.Invoke)})
			}
		}
	}
	return v, pairs, excluded
}

// liveness checks I9: the intervals in which some live client waited (a
// waiting call, minus its client's stopped windows) and no grant's window
// was open (from the grant's completion to its end: release, loss signal
// or last known deadline). It returns the longest such interval and the
// number longer than bound.
func liveness(cs []Call, h *hist, bound time.Duration) (longest time.Duration, over int) {
	var waiting [][2]int64
	for _, c := range cs {
		ivs := [][2]int64{{c.Invoke, c.End}}
		ivs = subtract(ivs, stopWindows(h, c.Client))
		waiting = append(waiting, ivs...)
	}
	var held [][2]int64
	for _, g := range h.grants {
		if g.End > g.Complete {
			held = append(held, [2]int64{g.Complete, g.End})
		}
	}
	free := subtract(union(waiting), union(held))
	for _, iv := range free {
		from, to := iv[0], iv[1]
		if h.runStart > 0 {
			from = max(from, h.runStart)
		}
		if h.runEnd > 0 {
			to = min(to, h.runEnd)
		}
		if to <= from {
			continue
		}
		d := time.Duration(to - from)
		longest = max(longest, d)
		if d > bound {
			over++
		}
	}
	return longest, over
}

// union merges intervals into sorted disjoint ones.
func union(ivs [][2]int64) [][2]int64 {
	s := make([][2]int64, 0, len(ivs))
	for _, iv := range ivs {
		if iv[1] > iv[0] {
			s = append(s, iv)
		}
	}
	sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] })
	var out [][2]int64
	for _, iv := range s {
		if n := len(out); n > 0 && iv[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], iv[1])
			continue
		}
		out = append(out, iv)
	}
	return out
}

// subtract returns the parts of ivs outside every interval of cut.
func subtract(ivs, cut [][2]int64) [][2]int64 {
	cut = union(cut)
	var out [][2]int64
	for _, iv := range union(ivs) {
		from := iv[0]
		for _, c := range cut {
			if c[1] <= from || c[0] >= iv[1] {
				continue
			}
			if c[0] > from {
				out = append(out, [2]int64{from, c[0]})
			}
			from = max(from, c[1])
		}
		if from < iv[1] {
			out = append(out, [2]int64{from, iv[1]})
		}
	}
	return out
}
