// Package check verifies a lab history against what distlock promises:
//
//	I1  validity windows of two grants of one name never overlap (where the
//	    mode claims exclusion);
//	I2  no stale write accepted by the fenced resource (nor, superseded.go,
//	    a write of a grant after one of a later grant was answered);
//	I3  tokens strictly increase in the real-time order of grants;
//	I4  no acknowledged update lost (the final set holds every
//	    acknowledged add);
//	I5  the fenced resource's history is linearizable (porcupine, fenced
//	    register model);
//	I6  loss was signalled to the holder no later than its local deadline;
//	I7  after faults heal, acquisition works again within ttl + backoff;
//	I8  fair order: among live fair waiters, grants follow the order in
//	    which their calls started (beyond a margin) (queue.go);
//	I9  liveness: the lock is never free for longer than a bound while a
//	    live client waits (queue.go);
//	I10 one leader at a time: no two leaderships of an election overlap
//	    in real time (election.go);
//	I11 terms strictly increase in the order of election (election.go).
//
// The same checks run on the unfenced control copy of the resource, where
// violations are expected: they show the checks have teeth.
package check

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/distlock/distlock/safety/history"
)

// Params are what a run claims and tolerates.
type Params struct {
	// TTL is the lease ttl of every client of the run.
	TTL time.Duration
	// SignalTolerance is how late a loss signal may come after the local
	// deadline beyond the drift allowance (timer and scheduling latency).
	SignalTolerance time.Duration
	// Backoff is what I7 allows on top of the ttl: waiter polling, retry
	// pauses, reconnects.
	Backoff time.Duration
	// LinearizeTimeout bounds porcupine.
	LinearizeTimeout time.Duration
	// VisualizePath, when set, is where porcupine's HTML visualisation is
	// written if I5 fails.
	VisualizePath string
	// RecoveryBound, when set, replaces I7's ttl + backoff (the queue
	// scenarios: a dead waiter at the head costs up to QueueBound).
	RecoveryBound time.Duration
	// FairMargin is I8's margin (0: DefaultFairMargin); QueueBound is
	// I9's bound (0: QueueBound).
	FairMargin time.Duration
	QueueBound time.Duration
	// Election: the run's grants are leaderships (Campaign); I10 and I11
	// apply.
	Election bool
	// Limit > 0: the run's grants are a semaphore's permits (I12: never
	// more than Limit held, weights counted); Shared: the grants are an
	// RW lock's (I13: a writer never together with anyone else).
	Limit  int
	Shared bool
}

// Result is what a history shows.
type Result struct {
	Grants  Counts // acquire calls
	Faults  int    // fault windows
	Windows int    // grants with a validity window

	// I1: pairs of grants whose validity windows overlap.
	Overlaps []Overlap
	// I2: stale applies accepted (fenced) / stale writes that landed
	// (control), by real time and by the order of the final set.
	StaleFenced, StaleControl int
	// Superseded: applies of a grant the fenced resource accepted after
	// it had answered an apply of a later grant; RefusedNewer: applies it
	// refused because an earlier grant's token was not below (both
	// superseded.go).
	Superseded, RefusedNewer int
	// I3: grants whose token is not above every earlier grant's.
	TokenInversions int
	// I4: acknowledged adds missing from the final set.
	AckFenced, AckControl   int
	LostFenced, LostControl int
	// I5: "ok", "violation", Timeout or "n/a".
	Linearizable  string
	Visualization string
	// I6: loss-signal lags (signal time minus local deadline) of library
	// leases; Late counts lags beyond drift + tolerance, and checks that
	// found a lease still valid after its deadline. Excluded counts
	// signals of stopped holders (SIGSTOP), which cannot act on anything.
	Lags     []time.Duration
	Late     int
	Excluded int
	// I7: time from each heal to the next grant (beyond the end of the
	// leases that were legitimately held at the heal); Slow counts those
	// above ttl + backoff, Unchecked heals too close to the end.
	Recoveries []time.Duration
	Slow       int
	Unchecked  int
	// I8: fair-order violations among the waiting calls (Calls) of
	// clients with a waiting policy; OrderPairs pairs were compared,
	// OrderExcluded were not (a stopped waiter, a lost queue).
	Calls         int
	OutOfOrder    []OrderViolation
	OrderPairs    int
	OrderExcluded int
	// I9: the longest interval in which the lock was free while a live
	// client waited, and how many exceeded the bound.
	LongestFree time.Duration
	FreeOver    int
	// I10, I11 (the election scenarios): the leaderships, those with no
	// recorded end (Unended), pairs that overlap, terms not above every
	// earlier one, and the writes leaders sent after their window.
	Leaderships    []Leadership
	Unended        int
	LeaderOverlaps []LeaderOverlap
	TermInversions int
	Deposed        Deposed

	// ClientLag is the worst scheduling delay the process clients
	// measured (their client-exit events): a time bound missed on a
	// machine this slow is the machine's.
	ClientLag time.Duration
	// ServerLag is the slowest answer to a trivial request (Redis PING,
	// an etcd serializable read, PostgreSQL SELECT 1, ZooKeeper ruok) the
	// lab's server probe counted on a backend server (its server-lag
	// events), leaving out a server's answers during a fault on it and
	// for ServerHealMargin after the heal; SlowServer names that server.
	// Like ClientLag: a time bound missed while the servers answered this
	// slowly is the machine's.
	ServerLag  time.Duration
	SlowServer string

	Notes []string

	// Unjudged lists what the history does not let the checks decide: the
	// final state of the fenced resource missing while acknowledged adds
	// exist (I4, and I2's final-set part), porcupine out of time (I5). A
	// run with any is a failed run ("cannot judge"), never a pass.
	Unjudged []string

	// I12 (semaphores): moments (a grant's window starting) at which the
	// permits held, weights counted, exceeded the limit; MaxHeld is the
	// most permits held at once. I13 (RW locks): pairs of windows where a
	// writer's intersects anyone else's.
	OverLimit      []SharedViolation
	WriterOverlaps []SharedViolation
	MaxHeld        int
}

// Counts counts operations by result.
type Counts struct{ Attempted, OK, Failed, Unknown int }

// Overlap is one pair of grants whose windows overlap.
type Overlap struct {
	A, B     Grant
	Duration time.Duration
}

// Grant is one successful acquisition as the history shows it.
type Grant struct {
	Client, Owner, Impl string
	Token               uint64
	Invoke, Complete    int64
	// End is when the holder stopped believing it held the lock: release,
	// loss signal or last known deadline, whichever came first (0: never
	// granted a window).
	End int64
	// Intervals are the validity intervals [from, until] before End.
	Intervals [][2]int64
	// Weight and Access: a shared lock's grant (history.Event).
	Weight int
	Access string
}

// Run checks events.
func Run(events []history.Event, p Params) Result {
	var r Result
	h := index(events)
	r.Grants = h.counts
	r.Faults = len(h.faults)
	r.Windows = len(h.grants)
	r.Overlaps = overlaps(h)
	r.StaleFenced, r.StaleControl = stale(h)
	r.Superseded, r.RefusedNewer = superseded(h), refusedNewer(h)
	r.TokenInversions = tokenInversions(h)
	r.AckFenced, r.LostFenced = lost(h, history.Fenced)
	r.AckControl, r.LostControl = lost(h, history.Control)
	r.Linearizable, r.Visualization = linearizable(h, p)
	r.Unjudged = unjudged(h, r, p)
	r.Lags, r.Late, r.Excluded = signals(h, p)
	r.Recoveries, r.Slow, r.Unchecked = recoveries(h, p)
	r.ClientLag = clientLag(h)
	r.ServerLag, r.SlowServer = serverLag(h)
	cs := calls(h)
	r.Calls = len(cs)
	margin, bound := p.FairMargin, p.QueueBound
	if margin <= 0 {
		margin = DefaultFairMargin
	}
	if bound <= 0 {
		bound = QueueBound
	}
	r.OutOfOrder, r.OrderPairs, r.OrderExcluded = fairOrder(cs, h, margin)
	r.LongestFree, r.FreeOver = liveness(cs, h, bound)
	if p.Limit > 0 || p.Shared {
		r.OverLimit, r.WriterOverlaps, r.MaxHeld = sharedChecks(h, p.Limit)
	}
	if p.Election {
		r.Leaderships, r.Unended = leaderships(h)
		r.LeaderOverlaps = leaderOverlaps(r.Leaderships)
		r.TermInversions = termInversions(r.Leaderships)
		r.Deposed = deposedWrites(h, r.Leaderships)
	}
	return r
}

// hist is a history indexed for the checks.
type hist struct {
	events   []history.Event
	grants   []*Grant // by Complete
	byOwner  map[string]*Grant
	counts   Counts
	faults   []history.Event
	applies  map[string][]history.Event // by resource: reads and writes
	final    map[string]history.Event
	losses   []history.Event
	checked  []history.Event
	runStart int64
	runEnd   int64
}

func index(events []history.Event) *hist {
	h := &hist{events: events, byOwner: map[string]*Grant{}, applies: map[string][]history.Event{}, final: map[string]history.Event{}}
	releases := map[string]int64{}
	lossAt := map[string]int64{}
	validity := map[string][][2]int64{}
	lastDeadline := map[string]int64{}
	begun := map[string]history.Event{} // applies sent whose outcome is not recorded yet
	for _, e := range events {
		switch e.Kind {
		case history.KindAcquire:
			h.counts.Attempted++
			switch e.Result {
			case history.OK:
				h.counts.OK++
				g := &Grant{Client: e.Client, Owner: e.Owner, Impl: e.Detail, Token: e.Token, Invoke: e.Invoke, Complete: e.Complete,
					Weight: e.Weight, Access: e.Access}
				g.Intervals = [][2]int64{{e.Complete, e.Deadline}}
				lastDeadline[e.Owner] = e.Deadline
				h.grants = append(h.grants, g)
				h.byOwner[e.Owner] = g
			case history.Fail:
				h.counts.Failed++
			default:
				h.counts.Unknown++
			}
		case history.KindValidity:
			validity[e.Owner] = append(validity[e.Owner], [2]int64{e.At, e.Deadline})
			lastDeadline[e.Owner] = max(lastDeadline[e.Owner], e.Deadline)
		case history.KindChecked:
			h.checked = append(h.checked, e)
			lastDeadline[e.Owner] = max(lastDeadline[e.Owner], e.Deadline)
		case history.KindLoss:
			h.losses = append(h.losses, e)
			lossAt[e.Owner] = e.At
			lastDeadline[e.Owner] = max(lastDeadline[e.Owner], e.Deadline)
		case history.KindRelease:
			releases[e.Owner] = e.Invoke
		case history.KindApplyBegin:
			begun[applyKey(e.Client, e.Res, e.Detail, e.Invoke)] = e
		case history.KindRead, history.KindWrite:
			delete(begun, applyKey(e.Client, e.Res, e.Kind, e.Invoke))
			h.applies[e.Res] = append(h.applies[e.Res], e)
		case history.KindFault:
			h.faults = append(h.faults, e)
		case history.KindFinal:
			h.final[e.Res] = e
		case history.KindRunStart:
			h.runStart = e.At
		case history.KindRunEnd:
			h.runEnd = e.At
		}
	}
	// An apply sent by a client that died before it recorded the answer:
	// the resource may have applied it, so it is an apply of unknown
	// outcome (a fenced read may have raised the mark, a write set the
	// value).
	dead := make([]history.Event, 0, len(begun))
	for _, b := range begun {
		dead = append(dead, b)
	}
	sort.Slice(dead, func(i, j int) bool { return dead[i].Invoke < dead[j].Invoke })
	for _, b := range dead {
		b.Kind, b.Detail, b.Result = b.Detail, "", history.Unknown
		h.applies[b.Res] = append(h.applies[b.Res], b)
	}
	for _, g := range h.grants {
		g.Intervals = append(g.Intervals, validity[g.Owner]...)
		end := lastDeadline[g.Owner]
		if t, ok := releases[g.Owner]; ok && t < end {
			end = t
		}
		if t, ok := lossAt[g.Owner]; ok && t < end {
			end = t
		}
		g.End = end
		var ivs [][2]int64
		for _, iv := range g.Intervals {
			iv[1] = min(iv[1], end)
			if iv[0] < iv[1] {
				ivs = append(ivs, iv)
			}
		}
		g.Intervals = ivs
	}
	sort.Slice(h.grants, func(i, j int) bool { return h.grants[i].Complete < h.grants[j].Complete })
	return h
}

// unjudged lists what r cannot decide (Result.Unjudged): I4 (and I2's
// final-set part) without the fenced resource's final state while
// acknowledged adds exist, I5 when porcupine ran out of time.
func unjudged(h *hist, r Result, p Params) []string {
	var out []string
	if _, ok := h.final[history.Fenced]; !ok && r.AckFenced > 0 {
		out = append(out, fmt.Sprintf("I2, I4: no final state of the fenced resource (%d acknowledged adds unchecked)", r.AckFenced))
	}
	if r.Linearizable == Timeout {
		out = append(out, fmt.Sprintf("I5: porcupine gave no answer within %v", linearizeTimeout(p)))
	}
	return out
}

// Drift is distlock's drift allowance for ttl.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// applyKey identifies an apply across its KindApplyBegin and its KindRead
// or KindWrite event.
func applyKey(client, res, kind string, invoke int64) string {
	return client + "\x00" + res + "\x00" + kind + "\x00" + strconv.FormatInt(invoke, 10)
}

// clientLag returns the worst scheduling delay the process clients
// recorded on exit, leaving out the clients a fault targeted: a client
// the lab stopped (SIGSTOP) measured its stop, which is the fault, not
// the machine.
func clientLag(h *hist) time.Duration {
	targeted := map[string]bool{}
	for _, f := range h.faults {
		targeted[f.Target] = true
	}
	var worst int64
	for _, e := range h.events {
		if e.Kind == history.KindClientExit && !targeted[e.Client] {
			worst = max(worst, e.Lag)
		}
	}
	return time.Duration(worst)
}

// ServerHealMargin is how long after a fault on a server its answers are
// still the fault's, not the machine's: a server resumed or restarted
// catches up first (requests queued while it was stopped, etcd's raft log,
// a ZooKeeper member's sync with its leader).
const ServerHealMargin = 250 * time.Millisecond

// serverLag returns the slowest answer the lab's server probe counted
// (history.KindServerLag) and its server, leaving out an answer whose
// request overlaps a fault on that server (the fault's Target or one of
// its Servers) or the ServerHealMargin after it: a server the lab stopped,
// killed or cut off answers late or not at all because of the fault, not
// the machine.
func serverLag(h *hist) (time.Duration, string) {
	var worst int64
	var who string
	for _, e := range h.events {
		if e.Kind != history.KindServerLag || e.Lag <= worst || faulted(h.faults, e.Target, e.Invoke, e.Complete) {
			continue
		}
		worst, who = e.Lag, e.Target
	}
	return time.Duration(worst), who
}

// faulted reports whether [from, to] meets a fault on server, its heal
// margin included.
func faulted(faults []history.Event, server string, from, to int64) bool {
	for _, f := range faults {
		if (f.Target == server || slices.Contains(f.Servers, server)) && f.Start <= to && from <= f.End+int64(ServerHealMargin) {
			return true
		}
	}
	return false
}
