package enginetest

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/distlock/distlock/engine"
)

// timing is how the specification bounds an engine's clocks: a grant is
// surely live from its answer until its ttl, counted from its request, less
// margin; it may be live from its request until its ttl, counted from its
// answer and fitted to the engine (fit), plus slack.
type timing struct {
	fit    func(time.Duration) time.Duration
	slack  time.Duration
	fair   bool // Capabilities.Fair: a fair waiter's queue keeps newcomers out
	votes  bool // Harness.Votes: overlapping attempts can split the vote
	renews bool // Faults.Renews: a fault may restart a live lease's ttl
	tokens bool // not Harness.UncheckedTokens: renewals and releases name their grant's token
}

func margin(ttl time.Duration) time.Duration { return engine.Drift(ttl) + 5*time.Millisecond }

// grant is one new grant of a history (re-entries and attaches are events
// of the grant they joined) with the intervals in which it is surely and
// possibly live.
type cgrant struct {
	ev       *event
	name     int
	owner    string
	class    lockClass
	weight   int
	token    uint64
	sureFrom time.Duration // its answer
	sureTo   time.Duration
	possFrom time.Duration // its request
	possTo   time.Duration
	unknown  bool          // a wait that ended: granted and dropped, or never granted
	holds    int           // the holds (re-entries) not released yet
	freed    bool          // a release or force-release bounds possTo (no expiry to restart)
	ttl      time.Duration // the longest ttl asked for it (grant, re-entries, extensions)
}

func (g *cgrant) String() string {
	return fmt.Sprintf("%s %s of %s (token %d, surely live %.1f-%.1fms, possibly %.1f-%.1fms)",
		g.class, g.ev.Op.Kind, g.owner, g.token, ms(g.sureFrom), ms(g.sureTo), ms(g.possFrom), ms(g.possTo))
}

// surelyOver reports whether g is surely live over all of [a, b].
func (g *cgrant) surelyOver(a, b time.Duration) bool {
	return !g.unknown && g.sureFrom <= a && b < g.sureTo
}

// possiblyDuring reports whether g may be live at some point of [a, b].
func (g *cgrant) possiblyDuring(a, b time.Duration) bool { return g.possFrom <= b && a <= g.possTo }

// judge checks a history against the sequential specification of the
// locks and returns the violations found, each in words.
func judge(h *history, tm timing) []string {
	evs := slices.Clone(h.Events)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Inv < evs[j].Inv })
	grants := buildGrants(evs, tm)
	var bad []string
	bad = append(bad, h.Local...)
	bad = append(bad, checkExclusion(grants, evs)...)
	bad = append(bad, checkTokens(grants, evs)...)
	bad = append(bad, checkRefusals(grants, evs, tm)...)
	bad = append(bad, checkEarlyLoss(grants, evs)...)
	bad = append(bad, checkViews(grants, evs)...)
	for _, e := range evs {
		if e.Op.Kind == opBadWeight && e.Out != outArg && e.Out != outKind && e.Out != outOther {
			bad = append(bad, fmt.Sprintf("argument: %v, a weight above every limit, was not refused as an argument error", e))
		}
	}
	return bad
}

// buildGrants turns the history's grants into intervals: the events of a
// grant's owner after it (extensions, attaches, releases) and the
// force-releases of its name bound them.
func buildGrants(evs []*event, tm timing) []*cgrant {
	var gs []*cgrant
	type ownerName struct {
		owner string
		name  int
	}
	byOwner := map[ownerName]*cgrant{} // the owner's latest grant of a name so far
	for _, e := range evs {
		if !e.Op.Kind.acquires() || e.Out == outSkipped {
			continue
		}
		if e.Op.Kind == opSetAcquire && e.Out == outOK {
			// A set that waited may have taken its names in rounds
			// before the one granted, each round with owners of its own,
			// and given them back: holds by owners not known, while the
			// call ran.
			gs = append(gs, &cgrant{ev: e, name: e.NameIdx, owner: anyOwner, class: e.Class, weight: 1, holds: 1,
				unknown: true, sureFrom: e.Resp, possFrom: e.Inv, possTo: e.Resp + tm.slack})
		}
		if e.Op.Kind == opReenter {
			g := byOwner[ownerName{e.Owner, e.NameIdx}]
			if e.Out == outOK && g != nil && g.token == e.Token {
				g.possTo = max(g.possTo, e.Resp+tm.fit(e.Op.TTL)+tm.slack)
				g.ttl = max(g.ttl, e.Op.TTL)
				g.holds++
				continue // a re-entry: the grant it joined stays
			}
			if e.Out != outOK && g != nil && !g.unknown && e.Inv <= g.possTo {
				// A failed re-entry of a grant that may still be live: it
				// joined it or nothing, and its Client dropped the hold it
				// may have added (a grant whose answer came too late, say);
				// the owner's grant stays the one later calls act on.
				g.possTo = max(g.possTo, e.Resp+tm.fit(e.Op.TTL)+tm.slack)
				g.ttl = max(g.ttl, e.Op.TTL)
				continue
			}
		}
		g := &cgrant{ev: e, name: e.NameIdx, owner: e.Owner, class: e.Class, weight: max(e.Weight, 1), token: e.Token,
			sureFrom: e.Resp, possFrom: e.Inv, holds: 1, ttl: e.Op.TTL}
		switch {
		case e.Out == outOK:
			g.sureTo = e.Inv + e.Op.TTL - margin(e.Op.TTL)
			if e.GrantEnd > 0 {
				// An aged grant: valid from its request less its age.
				g.sureTo = min(g.sureTo, e.GrantEnd)
			}
			g.possTo = e.Resp + tm.fit(e.Op.TTL) + tm.slack
		case e.Op.Kind.waits() && (e.Out == outLocked || e.Out == outOther):
			// A wait that ended may have been granted as it ended and its
			// hold dropped by the Client.
			g.unknown = true
			g.possTo = e.Resp + tm.fit(e.Op.TTL) + tm.slack
		case e.Out == outOther:
			g.unknown = true
			g.possTo = e.Resp + tm.fit(e.Op.TTL) + tm.slack
		default:
			continue
		}
		byOwner[ownerName{e.Owner, e.NameIdx}] = g
		gs = append(gs, g)
	}
	for _, e := range evs {
		switch e.Op.Kind {
		case opExtend, opAttach, opRelease, opReenter, opForceHolder:
			// A force-release of a holder names its owner, not a grant's
			// token: it frees the owner's latest grant, whichever lease
			// the op took the owner from.
			g := ownerGrant(gs, e, tm.tokens && e.Op.Kind != opForceHolder)
			if g == nil || g.unknown || e.Inv < g.sureFrom && e.Op.Kind != opForceHolder {
				continue
			}
			switch e.Op.Kind {
			case opExtend, opAttach:
				switch {
				case e.Out == outOK && e.Inv < g.sureTo:
					// Held when the extension ran (at or after its request),
					// continuously since the grant, and until its ttl after.
					g.sureTo = e.Inv + e.Op.TTL - margin(e.Op.TTL)
				case e.Out == outOK:
					g.sureTo = min(g.sureTo, e.Inv)
				default:
					// An extension not confirmed may have run all the same,
					// and a shorter ttl shortens the lease: surely live only
					// until its ttl after its request. (Its Client, which
					// counts a confirmed extension from its request too,
					// finds a late answer's deadline passed: "lost".)
					g.sureTo = min(g.sureTo, e.Inv+e.Op.TTL-margin(e.Op.TTL))
				}
				g.possTo = max(g.possTo, e.Resp+tm.fit(e.Op.TTL)+tm.slack)
				g.ttl = max(g.ttl, e.Op.TTL)
			case opReenter:
				// A re-entry that was a new grant (its own token): the
				// earlier one had ended.
				g.sureTo = min(g.sureTo, e.Inv)
			case opRelease, opForceHolder:
				if e.Out == outSkipped {
					continue
				}
				g.sureTo = min(g.sureTo, e.Inv)
				if e.Op.Kind == opRelease && (e.Out == outOK || e.Out == outNotHeld && (e.Inv >= e.TargetEnd || e.PastDeadline)) {
					// A lease whose own deadline had passed is answered
					// "not held" by its Client, which sends the release
					// all the same: where the engine still kept the grant
					// with another hold (a re-entry's), one hold went and
					// the grant stays.
					g.holds--
					if e.Out == outNotHeld && g.holds > 0 {
						continue
					}
				}
				if e.Out == outNotHeld || e.Out == outOK && (g.holds <= 0 || e.Op.Kind == opForceHolder) {
					g.possTo = min(g.possTo, e.Resp+tm.slack)
					g.freed = true
				}
			}
		case opForce:
			if e.Out != outOK && e.Out != outOther {
				continue
			}
			for _, g := range gs {
				if g.name != e.NameIdx {
					continue
				}
				if e.Resp > g.possFrom {
					g.sureTo = min(g.sureTo, e.Inv)
				}
				if e.Out == outOK && e.Inv > g.sureFrom {
					g.possTo = min(g.possTo, e.Resp+tm.slack)
					g.freed = true
				}
			}
		}
	}
	for _, g := range gs {
		g.possTo = max(g.possTo, g.sureTo)
		if g.unknown {
			g.possTo = max(g.possTo, appliedLateTo(g, evs, tm))
		}
		if tm.renews && !g.freed {
			g.possTo = renewedTo(g, evs, tm)
		}
	}
	return gs
}

// appliedLateTo returns until when g, a grant of unknown outcome, may be
// live when its request was held up by faults. The Client never cuts such
// a request short (it settles the late answer, releasing a grant nobody
// waits for): a request held in a stalled connection of its client, or
// retried by the client library while the backend restarts, runs when the
// fault is over, after the caller gave up, and its grant lives until its
// ttl unless the settle releases it first. Without faults the request runs
// within slack of the caller's giving up; each fault that begins by then
// (and by the end of the faults before it) moves that to its own end.
// Like renewedTo, it widens only the intervals in which a grant may be
// live.
func appliedLateTo(g *cgrant, evs []*event, tm timing) time.Duration {
	applied := g.ev.Resp + tm.slack
	for _, f := range evs { // in the order they were asked for
		held := f.Op.Kind == opRestart || f.Op.Kind == opStall && f.Client == g.ev.Client
		if held && f.Inv <= applied && f.Resp >= g.ev.Inv {
			applied = max(applied, f.Resp+tm.slack)
		}
	}
	return applied + tm.fit(g.ttl) + tm.slack
}

// renewedTo returns until when g may be live on a backend whose faults may
// restart a live lease at its full ttl (timing.renews): past the end of
// every fault that overlaps the time g may have been live, by its longest
// ttl and the slack. evs are in request order.
func renewedTo(g *cgrant, evs []*event, tm timing) time.Duration {
	to := g.possTo
	for _, f := range evs {
		if (f.Op.Kind == opStall || f.Op.Kind == opRestart) && f.Resp >= g.possFrom && f.Inv <= to {
			to = max(to, f.Resp+tm.fit(g.ttl)+tm.slack)
		}
	}
	return to
}

// ownerGrant returns the grant of e's owner that e acted on. With byToken
// (an engine that checks grant tokens: timing.tokens) it is the grant whose
// token e's lease holds, when the history has it: a lease of an earlier
// grant of the same owner (re-entered as a new grant after a force-release)
// is refused, and the newer grant stays. Otherwise it is the latest asked
// for before e: an engine that acts by owner alone releases or extends the
// owner's current grant when such a lease's Client sends it.
func ownerGrant(gs []*cgrant, e *event, byToken bool) *cgrant {
	var last, target *cgrant
	for _, g := range gs {
		if g.owner == e.Owner && g.name == e.NameIdx && g.ev != e && g.ev.Inv < e.Inv {
			if last == nil || g.ev.Inv > last.ev.Inv {
				last = g
			}
			if byToken && e.Target != 0 && g.token == e.Target && (target == nil || g.ev.Inv > target.ev.Inv) {
				target = g
			}
		}
	}
	if target != nil {
		// The grant the call's lease holds: on an engine that checks
		// grant tokens (byToken) a renewal or release names its token and
		// is refused on a newer grant of the same owner (a re-entry after
		// a force-release is one), which stays live.
		return target
	}
	return last
}

// checkExclusion: no two grants that exclude each other are surely live at
// one moment; semaphore permits surely held never exceed the largest limit
// that may be in force.
func checkExclusion(gs []*cgrant, evs []*event) []string {
	var bad []string
	for i, a := range gs {
		for _, b := range gs[i+1:] {
			if a.name != b.name || a.owner == b.owner || a.unknown || b.unknown || !conflicts(a.class, b.class) {
				continue
			}
			from, to := max(a.sureFrom, b.sureFrom), min(a.sureTo, b.sureTo)
			if from < to {
				bad = append(bad, fmt.Sprintf("exclusion: %v and %v were both live during %.1f-%.1fms", a, b, ms(from), ms(to)))
			}
		}
		if a.class != classSem || a.unknown || a.sureFrom >= a.sureTo {
			continue
		}
		sum, who := 0, []string{}
		for _, b := range gs {
			if b.name == a.name && b.class == classSem && !b.unknown && b.sureFrom <= a.sureFrom && a.sureFrom < b.sureTo {
				sum += b.weight
				who = append(who, fmt.Sprintf("%s(%d)", b.owner, b.weight))
			}
		}
		if limit := maxLimit(evs, a.name, a.sureFrom); sum > limit {
			bad = append(bad, fmt.Sprintf("semaphore: %d permits held at %.1fms, limit at most %d: %v", sum, ms(a.sureFrom), limit, who))
		}
	}
	return bad
}

// maxLimit is the largest limit of name that may be in force at t: the
// declared one, or one a SetLimit asked for before t.
func maxLimit(evs []*event, name int, t time.Duration) int {
	limit := semLimit
	for _, e := range evs {
		if e.Op.Kind == opSetLimit && e.NameIdx == name && e.Inv <= t && e.Out != outArg && e.Out != outKind {
			limit = max(limit, e.Op.Limit)
		}
	}
	return limit
}

// minLimit is the smallest limit of name that may be in force at t.
func minLimit(evs []*event, name int, t time.Duration) int {
	limit := semLimit
	for _, e := range evs {
		if e.Op.Kind == opSetLimit && e.NameIdx == name && e.Inv <= t {
			limit = min(limit, e.Op.Limit)
		}
	}
	return limit
}

// checkTokens: a grant answered before another was asked for has the
// smaller token; a re-entry keeps its grant's token.
func checkTokens(gs []*cgrant, evs []*event) []string {
	var bad []string
	for _, a := range gs {
		for _, b := range gs {
			if a.name != b.name || a.unknown || b.unknown || a.ev.Resp >= b.ev.Inv {
				continue
			}
			if a.token >= b.token {
				bad = append(bad, fmt.Sprintf("tokens: %v was granted before %v was asked for, with a token not below it", a, b))
			}
		}
	}
	return bad
}

// checkRefusals: a request for a kind other than the one surely holding
// its name is refused as an argument error, not as contention; a request
// that nothing else may conflict with (no holder may be live, no waiter
// may be queued, the permits a dead holder had are back) is granted; a
// newcomer does not take a lock a fair waiter is queued for.
func checkRefusals(gs []*cgrant, evs []*event, tm timing) []string {
	var bad []string
	for _, e := range evs {
		if !e.Op.Kind.acquires() || e.Out == outSkipped {
			continue
		}
		if e.Out == outLocked {
			for _, g := range gs {
				if g.name == e.NameIdx && g.class.family() != e.Class.family() && g.surelyOver(e.Inv, e.Resp) {
					bad = append(bad, fmt.Sprintf("kinds: %v was refused as contention while %v held the name", e, g))
					break
				}
			}
		}
		if e.Out == outLocked && !e.Op.Kind.waits() && e.Op.Kind != opReenter && e.Op.Kind != opGhost && free(gs, evs, e, tm) {
			bad = append(bad, fmt.Sprintf("refused while free: %v, while no holder could be live and no waiter queued", e))
		}
		if e.Out == outOK && tm.fair && !e.Op.Kind.waits() && e.Op.Kind != opReenter && e.Op.Kind != opGhost && e.Class == classMutex && (queueSkipped(gs, evs, e) || ghostSkipped(gs, evs, e)) {
			bad = append(bad, fmt.Sprintf("queue: %v took the lock while a fair waiter was queued for it", e))
		}
	}
	return bad
}

// free reports whether nothing could keep the refused request e from its
// grant.
func free(gs []*cgrant, evs []*event, e *event, tm timing) bool {
	for _, w := range evs {
		if w.NameIdx == e.NameIdx && w.Op.Kind.waits() && w.Inv <= e.Resp && e.Inv <= w.Resp+engine.ReserveTTL+tm.slack {
			return false // a waiter may be queued, or the lock reserved for it
		}
		if w.NameIdx == e.NameIdx && w.Op.Kind == opGhost && w.Inv <= e.Resp && e.Inv <= w.Resp+w.Op.Wait+engine.ReserveTTL+tm.slack {
			return false // a ghost waiter may be queued
		}
		if w.NameIdx == e.NameIdx && w.Op.Kind == opSetLimit && w.Inv <= e.Resp {
			return false // limits may have changed: judged by exclusion only
		}
		if w.NameIdx == e.NameIdx && (w.Op.Kind == opForce || w.Op.Kind == opForceHolder) && w.Inv <= e.Resp && e.Inv <= w.Resp {
			// A force-release during the request may take the grant being
			// made: a quorum's grant is two phases, and a grant freed
			// between them is answered as not made.
			return false
		}
		if tm.votes && w != e && w.NameIdx == e.NameIdx && w.Op.Kind.acquires() && w.Out != outSkipped && w.Inv <= e.Resp && e.Inv <= w.Resp {
			return false // a split vote: each attempt won fewer than a majority
		}
	}
	weight := 0
	for _, g := range gs {
		if g.name != e.NameIdx || g.ev == e || !g.possiblyDuring(e.Inv, e.Resp) {
			continue
		}
		if g.class.family() != e.Class.family() || g.class != classSem || e.Class != classSem {
			if conflicts(g.class, e.Class) {
				return false
			}
			continue
		}
		weight += g.weight
	}
	return e.Class != classSem || weight+e.Weight <= minLimit(evs, e.NameIdx, e.Resp)
}

// queueSkipped reports whether the newcomer e was granted while a fair
// waiter was surely queued: an Inspect answered before e was asked for saw
// waiters, every waiting operation on the name since is a fair one, none
// has ended or is about to give up, and no ghost waiter's entry could have
// been among those seen (ghostSkipped judges those).
func queueSkipped(gs []*cgrant, evs []*event, e *event) bool {
	for _, in := range evs {
		if in.Op.Kind != opInspect || in.NameIdx != e.NameIdx || in.Out != outOK || in.Resp >= e.Inv || !sawWaiters(in) {
			continue
		}
		if e.Resp >= kept(gs, evs, in) {
			continue // the head may have been dropped after a reservation lapsed
		}
		ok := true
		for _, w := range evs {
			if w.NameIdx == e.NameIdx && w.Op.Kind == opGhost && w.Inv <= e.Resp && w.Resp+w.Op.Wait >= in.Inv {
				ok = false // a ghost's entry the Inspect saw may have expired since
				break
			}
			if w.NameIdx != e.NameIdx || !w.Op.Kind.waits() || w.Inv > e.Resp {
				continue
			}
			if !w.Op.Fair || w.Resp >= in.Inv && w.Resp <= e.Resp || w.Resp > in.Inv && w.Inv+w.Op.Wait-50*time.Millisecond < e.Resp {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// ghostSkipped reports whether the newcomer e was granted while a ghost
// waiter (a fair queue entry) was surely queued: answered queued before e
// was asked for, and its entry's ttl not run out before e's answer.
func ghostSkipped(gs []*cgrant, evs []*event, e *event) bool {
	for _, g := range evs {
		if g.Op.Kind == opGhost && g.NameIdx == e.NameIdx && g.Out == outLocked && g.Bool &&
			g.Resp < e.Inv && e.Resp < g.Inv+g.Op.Wait-margin(g.Op.Wait) && e.Resp < kept(gs, evs, g) {
			return true
		}
	}
	return false
}

// kept returns until when the queue seen by the event q (an Inspect, or a
// ghost's request) surely keeps its head: a head that does not take the
// lock within ReserveTTL of its being freed is dropped (engine.Queuer), so
// only until ReserveTTL, less a margin, after the first moment after q's
// request at which the name may have been free.
func kept(gs []*cgrant, evs []*event, q *event) time.Duration {
	free := q.Resp + time.Hour
	held := false
	for _, g := range gs {
		if g.name != q.NameIdx {
			continue
		}
		if g.surelyOver(q.Inv, q.Resp) {
			held = true
		}
		switch {
		case g.unknown && g.possTo >= q.Inv:
			free = min(free, max(g.possFrom, q.Inv)) // dropped by its Client at any time
		case !g.unknown && g.sureTo >= q.Inv:
			free = min(free, g.sureTo) // its earliest end
		}
	}
	if !held {
		free = q.Inv
	}
	for _, r := range evs {
		switch r.Op.Kind {
		case opRelease, opForce, opForceHolder:
			if r.NameIdx == q.NameIdx && r.Resp >= q.Inv {
				free = min(free, max(r.Inv, q.Inv))
			}
		}
	}
	return free + engine.ReserveTTL - margin(engine.ReserveTTL)
}

func sawWaiters(in *event) bool {
	for _, i := range in.Infos {
		if i.Waiters > 0 {
			return true
		}
	}
	return false
}

// checkEarlyLoss: an extension, release or proclaim of a lease that is
// surely live is not answered "not held".
func checkEarlyLoss(gs []*cgrant, evs []*event) []string {
	var bad []string
	for _, e := range evs {
		switch e.Op.Kind {
		case opExtend, opRelease, opProclaim, opAttach:
		default:
			continue
		}
		// Only a lease of the current grant: a lease of an earlier one is
		// told it is lost by its Client, without asking the engine. And
		// only a lease whose own deadline had not passed: a Lease that was
		// not extended itself (the grant was, through another Lease of its
		// owner from Attach) is lost at its deadline, whatever the engine
		// keeps; so is one whose deadline passed while the call ran (the
		// Client checks it when it gets to the call, not at its start).
		if e.Inv >= e.TargetEnd || e.PastDeadline {
			continue
		}
		if g := ownerGrant(gs, e, false); g != nil && g.token == e.Target && e.Out == outNotHeld && g.surelyOver(e.Inv, e.Resp) {
			bad = append(bad, fmt.Sprintf("lost early: %v answered not held while %v", e, g))
		}
	}
	return bad
}

// checkViews: Inspect and List show every grant surely live while they
// ran, and no holder that cannot be live.
func checkViews(gs []*cgrant, evs []*event) []string {
	var bad []string
	for _, e := range evs {
		if (e.Op.Kind != opInspect && e.Op.Kind != opList) || e.Out != outOK {
			continue
		}
		seen := map[string]map[string]bool{}
		for _, in := range e.Infos {
			if seen[in.Name] == nil {
				seen[in.Name] = map[string]bool{}
			}
			for _, hd := range in.Holders {
				seen[in.Name][hd.Owner] = true
			}
		}
		for _, g := range gs {
			if (e.Op.Kind == opList || g.name == e.NameIdx) && g.surelyOver(e.Inv, e.Resp) && !seen[g.ev.Name][g.owner] {
				bad = append(bad, fmt.Sprintf("view: %v did not show %v", e, g))
			}
		}
		for name, owners := range seen {
			for owner := range owners {
				live := false
				for _, g := range gs {
					if g.ev.Name == name && (g.owner == owner || g.owner == anyOwner) && g.possiblyDuring(e.Inv, e.Resp) {
						live = true
					}
				}
				if !live {
					bad = append(bad, fmt.Sprintf("view: %v showed %s holding %s, which cannot be live then", e, owner, name))
				}
			}
		}
	}
	return bad
}
