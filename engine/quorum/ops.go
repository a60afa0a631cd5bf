package quorum

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
)

// acquireMutex is Acquire for a mutex: phase 1 on every node, then phase 2
// (fencing) on the nodes that granted, each counted against the validity
// measured from before the first send.
//
// For a one-off owner (and for any owner with WithFailFast) it returns as
// soon as the outcome is decided: a majority granted, or a majority can no
// longer grant. The answers still out are settled when they come (see
// flight): late grants of a kept lease stay, everything else is released.
func (e *Engine) acquireMutex(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Order == engine.OrderFair {
		return engine.Grant{}, errFairQuorum
	}
	// The validity is counted from before the first send, whatever the
	// nodes' leases had used before (Age): ask them for none.
	r.Aged = false
	e.propose(&r)
	if r.Waiter != "" {
		// The nodes' queues may disagree on the head. Per-node
		// reservations for different heads would split the vote, and so
		// would waiters that each stay behind another node's head: the
		// nodes wake their heads, and nobody is kept from the lock.
		r.Order = engine.OrderNoReserve
	}
	var stop func([]result[engine.Grant], int) bool
	var late func(int, result[engine.Grant])
	var f *flight
	if (e.failFast || exactHold(r)) && len(e.nodes) > 1 {
		f = &flight{e: e, req: r}
		stop = func(rs []result[engine.Grant], answered int) bool {
			return e.acquireDecided(rs)
		}
		late = f.late
	}
	// An election's value is set once phase 2 has settled the term
	// (announce): until then observers see no leader, never a term that
	// is not the leader's.
	value, timing := r.Metadata, valueWithGrant
	if r.Announce && e.settlesValues() {
		timing = valueWithTerm
		r.Metadata = ""
	}
	start := time.Now()
	rs := each(ctx, e, e.timeout(r.TTL), afterReleases(e, r.Name, afterCleanup(e, r, func(ctx context.Context, n node) (engine.Grant, error) {
		return n.eng.Acquire(ctx, r)
	})), stop, late)
	g, err := e.decide(ctx, r, rs, start)
	if f != nil {
		f.decide(rs, g)
	}
	if err == nil && g.Acquired {
		e.alignAnswered(r, rs, g.Token)
		for i, x := range rs {
			if x.done && (x.err != nil || !x.v.Acquired) {
				e.leaveNode(i, r) // (a straggler's late answer: flight.settle)
			}
		}
	}
	if err == nil && g.Acquired && r.Announce {
		if err := e.announce(ctx, r, value, g.Token, timing); err != nil {
			_, _ = e.Release(context.WithoutCancel(ctx), engine.ReleaseRequest{Name: r.Name, Owner: r.Owner})
			return engine.Grant{}, err
		}
	}
	return g, err
}

// decide turns the answers of phase 1 into the grant, of either kind:
// phase 2 when it is needed, the validity check, and the release of a
// failed grant on the nodes that granted (undo).
func (e *Engine) decide(ctx context.Context, r engine.AcquireRequest, rs []result[engine.Grant], start time.Time) (engine.Grant, error) {
	validity := func() time.Duration { return r.TTL - time.Since(start) - drift(r.TTL) }
	granted, _, _ := countGrants(rs)
	if granted < e.majority {
		e.undo(ctx, r, rs)
		if err := sharedRefusal(e, rs); err != nil {
			return engine.Grant{}, err // a majority refused the request itself (another kind, a limit or weight)
		}
		g, err := refusal(e, rs)
		if err == nil && granted > 0 {
			// A split vote: nobody got a majority (the nodes disagree on
			// the holder, the head of the queue or the permits free).
			// Retry after a random pause rather than on the wake-ups
			// every contender gets.
			g.Retry = splitBackoff()
		}
		return g, err
	}
	g := engine.Grant{Acquired: true, Token: e.grantToken(rs)}
	for _, x := range rs {
		if x.done && x.err == nil && x.v.Acquired {
			g.Count = max(g.Count, x.v.Count)
		}
	}
	var fenced int
	var fenceErrs []error
	if !e.noFencing && (e.skipValidity || validity() > 0) {
		// A node that granted with the grant's token has a high-water of
		// at least that token already (it minted it, or was raised to it
		// before): when a majority did, phase 2 has nothing left to do.
		if fenced = agreeing(rs, g.Token); fenced < e.majority {
			fenced, fenceErrs = e.raise(ctx, r, g.Token, rs)
		}
	}
	switch {
	case !e.skipValidity && validity() <= 0:
		e.undo(ctx, r, rs)
		return engine.Grant{}, ErrValidityUsedUp
	case e.noFencing || fenced >= e.majority:
		return g, nil
	}
	// Phase 2 did not reach a majority: the lock expired or was taken on
	// some nodes between the phases, or nodes failed.
	e.undo(ctx, r, rs)
	if validity() <= 0 {
		return engine.Grant{}, ErrValidityUsedUp
	}
	if len(fenceErrs) > 0 {
		return engine.Grant{}, &NoQuorumError{Op: "fence", OK: fenced, Majority: e.majority, Nodes: len(e.nodes), Errs: fenceErrs}
	}
	return engine.Grant{Retry: splitBackoff()}, nil
}

// undo takes back a grant that did not reach a majority (or ran out of
// validity) on the nodes that granted it: a mutex's by releaseAll, a
// shared lock's by dropShared (which also forgets a kind the grant left
// behind).
func (e *Engine) undo(ctx context.Context, r engine.AcquireRequest, rs []result[engine.Grant]) {
	if r.Kind.Shared() {
		e.dropShared(ctx, r, rs)
		return
	}
	e.releaseAll(ctx, r, rs)
}

// proposalMargin is how much further ahead than the per-node timeout the
// token a grant proposes to the nodes is (propose): room for the time
// between the proposal and the first send, and for a node's clock running
// slightly ahead of this process's.
const proposalMargin = 10 * time.Millisecond

// maxProposalAhead caps how far ahead of this process's clock a proposal
// is, half of what a node accepts (engine.MaxProposalLead, 1 s): the other
// half is room for a node's clock running behind this process's.
const maxProposalAhead = engine.MaxProposalLead * time.Microsecond / 2

// propose sets r's TokenProposal (unless WithoutFencing): the clock in µs
// plus the proposal's lead (proposalAhead). Nodes that mint from their
// clocks (the time floor) mint it when it is above their high-water and
// within engine.MaxProposalLead of their clocks, so that phase 1's tokens
// agree and phase 2 has nothing to do; a node behind (a lower high-water)
// mints its own, which phase 2 (or a late node's alignment) raises.
func (e *Engine) propose(r *engine.AcquireRequest) {
	if !e.noFencing {
		r.TokenProposal = uint64(max(time.Now().Add(e.proposalAhead(r.TTL)).UnixMicro(), 0))
	}
}

// proposalAhead is how far ahead of this process's clock a grant of ttl
// proposes its token: past the per-node timeout, by proposalMargin. A
// node's answer counts only within the per-node timeout, so every node
// that runs the request in time, a late one included (one that answers
// after the grant was decided), still finds its clock below the proposal
// and mints it, unless its clock runs ahead of this process's by more than
// the margin or its high-water is above the proposal. A late node that
// minted its own clock instead would keep a token above the grant's (a
// raise never lowers one): then no token has a majority once one of the
// nodes that has the grant's fails. Capped at maxProposalAhead, for a
// per-node timeout set longer (WithNodeTimeout).
func (e *Engine) proposalAhead(ttl time.Duration) time.Duration {
	return min(e.timeout(ttl)+proposalMargin, maxProposalAhead)
}

// grantToken returns the token of a grant from phase 1's answers: the
// token a majority of the nodes granted with, when one did (it is settled
// already: each of them minted it above its high-water, or was raised to
// it, so it is above every earlier settled token, whose majority meets
// this one), and otherwise the highest, which phase 2 raises on a
// majority. A majority's token wins over a minority's higher one, so a
// resent acquire (AttemptReplay) or a re-entry gets the token the lease
// has, whatever a late node minted meanwhile.
//
// With phase 2 off (WithoutFencing) it is always the highest.
func (e *Engine) grantToken(rs []result[engine.Grant]) uint64 {
	var top uint64
	for _, x := range rs {
		if x.done && x.err == nil && x.v.Acquired {
			if !e.noFencing && agreeing(rs, x.v.Token) >= e.majority {
				return x.v.Token
			}
			top = max(top, x.v.Token)
		}
	}
	return top
}

// agreeing counts the nodes that granted with token.
func agreeing(rs []result[engine.Grant], token uint64) int {
	n := 0
	for _, x := range rs {
		if x.done && x.err == nil && x.v.Acquired && x.v.Token == token {
			n++
		}
	}
	return n
}

// untilExpiry orders a ttl: no expiry (negative) is the longest.
func untilExpiry(d time.Duration) time.Duration {
	if d < 0 {
		return math.MaxInt64
	}
	return d
}

// exactHold reports whether a grant's hold is the only one its owner can
// have: a random owner (the client sets Attempt to Owner) never re-enters,
// so releasing by it drops exactly that grant.
func exactHold(r engine.AcquireRequest) bool { return r.OneOff }

// index returns the position of n among the nodes.
func (e *Engine) index(n node) int {
	for i := range e.nodes {
		if e.nodes[i].eng == n.eng {
			return i
		}
	}
	return -1
}

// splitBackoff is the random pause after a split vote.
func splitBackoff() time.Duration {
	return time.Millisecond + rand.N(15*time.Millisecond)
}

// countGrants counts the nodes that granted, the ones that answered that
// another owner holds the lock, and the ones that failed.
func countGrants(rs []result[engine.Grant]) (granted, held, failed int) {
	for _, r := range rs {
		switch {
		case !r.done:
		case r.err != nil:
			failed++
		case r.v.Acquired:
			granted++
		default:
			held++
		}
	}
	return granted, held, failed
}

// acquireDecided reports whether the answers so far decide an acquire: a
// majority granted; or a majority can no longer grant and a majority
// answered (contention); or a majority can no longer answer (no quorum).
// Contention is reported only on the word of a majority: a reachable
// minority that still holds an old grant does not make the lock "locked".
func (e *Engine) acquireDecided(rs []result[engine.Grant]) bool {
	granted, held, failed := countGrants(rs)
	minority := len(e.nodes) - e.majority
	return granted >= e.majority ||
		failed > minority ||
		(held+failed > minority && granted+held >= e.majority)
}

// refusal explains a failed grant: no quorum when fewer than a majority of
// the nodes answered (whatever the ones that answered said), otherwise
// contention (a majority held by other owners, or a split between owners).
func refusal(e *Engine, rs []result[engine.Grant]) (engine.Grant, error) {
	_, held, failed := countGrants(rs)
	var g engine.Grant
	for _, r := range rs {
		if r.done && r.err == nil && !r.v.Acquired {
			// Wait no longer than the earliest expiry among holders.
			if g.Holder == "" || (r.v.HolderTTL >= 0 && r.v.HolderTTL < g.HolderTTL) {
				g.Holder, g.HolderTTL = r.v.Holder, r.v.HolderTTL
			}
		}
	}
	if answered := len(e.nodes) - failed - unanswered(rs); answered < e.majority {
		return engine.Grant{}, &NoQuorumError{Op: "acquire", OK: answered, Majority: e.majority, Nodes: len(e.nodes), Held: held, Errs: nodeErrs(rs)}
	}
	// A waiter is queued where any node queued it (it heartbeats and
	// leaves everywhere), and watches the holder's expiry as the head of
	// any node's queue: the nodes may disagree on the order.
	for _, r := range rs {
		if r.done && r.err == nil && !r.v.Acquired {
			g.Queued = g.Queued || r.v.Queued
			g.Head = g.Head || r.v.Head
		}
	}
	return g, nil
}

// unanswered counts the nodes not waited for.
func unanswered[T any](rs []result[T]) int {
	n := 0
	for _, r := range rs {
		if !r.done {
			n++
		}
	}
	return n
}

// raise runs phase 2 on the nodes that granted, for the kind r asked (a
// mutex or a shared lock's holder), and returns how many confirmed that
// the owner still holds the lock with its high-water raised,
// and the errors of the others. It returns as soon as a majority confirmed
// (or can no longer confirm); the other raises complete in the background.
func (e *Engine) raise(ctx context.Context, r engine.AcquireRequest, token uint64, rs []result[engine.Grant]) (int, []error) {
	granted := make([]bool, len(rs))
	candidates := 0
	for i, x := range rs {
		granted[i] = x.done && x.err == nil && x.v.Acquired
		if granted[i] {
			candidates++
		}
	}
	stop := func(out []result[bool], _ int) bool {
		ok, no := 0, 0
		for i, x := range out {
			switch {
			case !granted[i] || !x.done:
			case x.err == nil && x.v:
				ok++
			default:
				no++
			}
		}
		return ok >= e.majority || candidates-no < e.majority
	}
	out := each(ctx, e, e.timeout(r.TTL), func(ctx context.Context, n node) (bool, error) {
		if !granted[e.index(n)] {
			return false, nil
		}
		return raiseFence(ctx, n.eng, engine.RaiseRequest{Name: r.Name, Owner: r.Owner, Token: token, Kind: r.Kind})
	}, stop, nil)
	ok := 0
	var errs []error
	for i, x := range out {
		switch {
		case !granted[i]:
		case x.err != nil:
			errs = append(errs, x.err)
		case x.v:
			ok++
		}
	}
	return ok, errs
}

// alignAnswered records the grant's token on the nodes that granted r in
// phase 1 with a lower token of their own, when phase 2 was skipped (a
// majority granted with the grant's token): a node behind (a high-water
// that missed earlier grants, on nodes WithoutTimeFloor; a clock far
// behind; a node that ignores proposals) would otherwise keep its lower
// token for the grant, and once one node of the majority failed no token
// would have a majority, so the views (Inspect, Leader, Attach) would
// report none. It runs in the background, as a late node's alignment
// (flight), and raises only (a higher token of a node's own stays, since a
// raise never lowers one). Where the raise fails otherwise, a one-off
// owner's grant is released there.
func (e *Engine) alignAnswered(r engine.AcquireRequest, rs []result[engine.Grant], token uint64) {
	if e.noFencing || r.Kind.Shared() || agreeing(rs, token) < e.majority {
		return // no phase 2, or phase 2 raised every node that granted
	}
	for i, x := range rs {
		if x.done && x.err == nil && x.v.Acquired && x.v.Token < token {
			e.bg.Add(1)
			go func() {
				defer e.bg.Done()
				e.alignNode(i, r, token)
			}()
		}
	}
}

// alignNode raises the token of r's grant on node i to token (a one-node
// phase 2), conditional on r.Owner still holding the lock there. A raise
// refused (engine.CheckRaise: below the node's token, or too far ahead)
// changes nothing; where the raise fails otherwise, a one-off owner's grant is
// released there.
func (e *Engine) alignNode(i int, r engine.AcquireRequest, token uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout(r.TTL))
	ok, err := raiseFence(ctx, e.nodes[i].eng, engine.RaiseRequest{Name: r.Name, Owner: r.Owner, Token: token, Kind: r.Kind})
	cancel()
	var ae *engine.ArgumentError
	if errors.As(err, &ae) {
		return
	}
	if (err != nil || !ok) && exactHold(r) {
		e.cleaners[i].add(engine.ReleaseRequest{Name: r.Name, Owner: r.Owner}, newReleaseID(), r.TTL)
	}
}

// releaseAll releases the failed grant on every node by owner token: at
// once where it was granted (so that others can have the lock), as an
// Undo, which puts a waiter the grant took out of a node's queue back in
// its place there; and in the background where the outcome is unknown (no
// answer, or an error).
func (e *Engine) releaseAll(ctx context.Context, r engine.AcquireRequest, rs []result[engine.Grant]) {
	granted := make([]bool, len(rs))
	for i, x := range rs {
		granted[i] = x.done && x.err == nil && x.v.Acquired
	}
	id := newReleaseID()
	out := each(context.WithoutCancel(ctx), e, e.timeout(r.TTL), func(ctx context.Context, n node) (bool, error) {
		if !granted[e.index(n)] {
			return false, nil // only the nodes that granted
		}
		_, err := releaseOnceOf(ctx, n.eng, engine.ReleaseRequest{Name: r.Name, Owner: r.Owner, Undo: true}, id)
		return true, err
	}, nil, nil)
	for i := range e.nodes {
		x := rs[i]
		switch {
		case granted[i] && out[i].err == nil:
		case !x.done:
			// a fail-fast straggler: handled when its answer comes
		case x.err == nil && !x.v.Acquired:
			// held by another owner there: nothing of ours
		case !exactHold(r):
			// An explicit owner may hold the lock there already (re-entry):
			// a release could drop that hold instead. The grant, if it
			// landed, expires with its ttl.
		default:
			e.cleaners[i].takeBack(r, true)
		}
	}
}

// Extend implements engine.Engine: every node gets the whole batch in one
// round trip, concurrently, after this engine's releases of its names that
// were still out there (afterReleasesOf); a request is extended when a
// majority confirms.
// It returns as soon as every request is decided (a majority extended it,
// or a majority can no longer); the other nodes' extensions complete in the
// background (an extension is safe to apply late).
func (e *Engine) Extend(ctx context.Context, reqs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	ttl := time.Duration(0)
	for _, r := range reqs {
		if ttl == 0 || r.TTL < ttl {
			ttl = r.TTL
		}
	}
	// A request is decided when a majority extended it with one token (the
	// grant's settled token, which Attach reports), or when a majority can
	// no longer extend it.
	decided := func(rs []result[[]engine.ExtendResult], _ int) bool {
		for i := range reqs {
			no := 0
			tokens := map[uint64]int{}
			for _, x := range rs {
				switch {
				case !x.done:
				case x.err == nil && i < len(x.v) && x.v[i].Err == nil && x.v[i].Status == engine.Extended:
					tokens[x.v[i].Token]++
				default:
					no++
				}
			}
			extended := 0
			for _, n := range tokens {
				extended += n
			}
			if (e.token(tokens) == 0 || extended < e.majority) && no <= len(e.nodes)-e.majority {
				return false
			}
		}
		return true
	}
	sent := untokened(reqs)
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.Name
	}
	rs := each(ctx, e, e.timeout(ttl), afterReleasesOf(e, names, func(ctx context.Context, n node) ([]engine.ExtendResult, error) {
		return n.eng.Extend(ctx, sent)
	}), decided, nil)
	out := make([]engine.ExtendResult, len(reqs))
	for i := range reqs {
		out[i] = e.extendOutcome(rs, reqs, i)
	}
	return out, nil
}

// extendOutcome is request i's answer from the nodes' answers: extended
// when a majority extended it (with the token they settled on), lost
// when a majority says the owner does not hold it (held by another when
// any of them says so, else missing), else a *NoQuorumError.
func (e *Engine) extendOutcome(rs []result[[]engine.ExtendResult], reqs []engine.ExtendRequest, i int) engine.ExtendResult {
	var extended, missing, other int
	tokens := map[uint64]int{}
	var errs []error
	for _, x := range rs {
		var one engine.ExtendResult
		switch {
		case x.err != nil:
			errs = append(errs, x.err)
			continue
		case i >= len(x.v):
			continue
		default:
			one = x.v[i]
		}
		switch {
		case one.Err != nil:
			errs = append(errs, one.Err)
		case one.Status == engine.Extended:
			extended++
			tokens[one.Token]++
		case one.Status == engine.HeldByOther:
			other++
		default:
			missing++
		}
	}
	switch {
	case extended >= e.majority:
		// Token 0 when the nodes that extended disagree on the token
		// (no majority settled one), and always WithoutFencing, whose
		// nodes keep tokens of their own: extended, but no token to
		// report (the Client takes a higher one for a newer grant).
		tok := uint64(0)
		if !e.noFencing {
			tok = settledToken(tokens, e.majority)
		}
		return engine.ExtendResult{Status: engine.Extended, Token: tok, Wake: reqs[i].Waiter && anyWake(rs, i)}
	case len(e.nodes)-(missing+other) < e.majority:
		// A majority says the owner does not hold it: lost. Taken over
		// when any of them says so (another owner holds it there, or a
		// force-release marked the owner freed): a node that answers
		// missing may never have had the grant (its answer timed out),
		// so it says nothing of why the lock went, and the answers that
		// decide are the first majority, in whatever order they came.
		if other > 0 {
			return engine.ExtendResult{Status: engine.HeldByOther}
		}
		return engine.ExtendResult{Status: engine.Missing}
	}
	return engine.ExtendResult{Err: &NoQuorumError{Op: "extend", OK: extended, Majority: e.majority, Nodes: len(e.nodes), Errs: errs}}
}

// releaseMutex is Release for a mutex: on every node concurrently. It returns
// once a majority answered; a node that failed is released again in the
// background. Its answer is releaseOutcome's: released when a majority
// dropped the hold, or one did and no majority says the owner holds
// nothing there; the count left is the majority's.
func (e *Engine) releaseMutex(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	// Decided when a majority released, a majority says the owner does
	// not hold it (a second release through another handle of the same
	// owner must not count a straggler's late hold as released), or a
	// majority can no longer answer.
	stop := func(rs []result[engine.ReleaseResult], _ int) bool { return e.releaseDecided(rs) }
	// One release id (the caller's) on every node and in every retry: a
	// node that did not answer may apply this release later (a paused
	// node) and the retry too, and the two must drop one hold, not two.
	// Nodes whose grant has not answered yet: the release there waits for
	// that answer, and the grant is released after it if the wait ends
	// first.
	f := e.flights.lookup(r.Name, r.Owner)
	if f != nil {
		f.release(id)
	}
	// A node that did not answer may still apply a queued grant of this
	// owner later (a paused node): release there once it answers again.
	late := func(i int, x result[engine.ReleaseResult]) {
		if x.err != nil {
			e.cleaners[i].add(engine.ReleaseRequest{Name: r.Name, Owner: r.Owner}, id, releaseTTL)
		}
	}
	// This engine's next acquire of name waits, node by node, for the
	// answers still out when Release returns (none with one node).
	var s *straggling
	straggler := late
	if len(e.nodes) > 1 {
		s = newStraggling(len(e.nodes))
		straggler = func(i int, x result[engine.ReleaseResult]) {
			late(i, x)
			if s.answer(i) {
				e.releasing.finish(r.Name, s)
			}
		}
	}
	// Releases of one name reach each node in the order this engine made
	// them: holds are counted, and a later release that overtook an
	// earlier one's straggler would leave the majority that answered it
	// holding a count the caller has released.
	rs := each(ctx, e, e.timeout(0), afterReleases(e, r.Name, func(ctx context.Context, n node) (engine.ReleaseResult, error) {
		if f != nil {
			f.waitNode(ctx, e.index(n))
		}
		return releaseOnce(ctx, n.eng, r.Name, r.Owner, id)
	}), stop, straggler)
	if s != nil {
		e.releasing.start(r.Name, s, func(i int) bool { return rs[i].done })
	}
	for i, x := range rs {
		if x.done {
			late(i, x)
		}
	}
	return e.releaseOutcome(rs)
}

// releaseOutcome is a release's answer from the nodes' answers: released
// when a majority dropped a hold (or any did, among mixed answers), with
// the holds left that a majority confirms; not held or not the owner when a
// majority says so; a *NoQuorumError when too many failed for a majority
// to answer.
func (e *Engine) releaseOutcome(rs []result[engine.ReleaseResult]) (engine.ReleaseResult, error) {
	released, notHeld, failed := countReleases(rs)
	notOwner := 0
	var left []int // the holds left on each node that answered (0: freed there)
	for _, x := range rs {
		switch {
		case !x.done || x.err != nil:
		case x.v.Status == engine.Released:
			left = append(left, x.v.Remaining)
		case x.v.Status == engine.NotOwner:
			notOwner++
		case x.v.Status == engine.NotHeld:
			left = append(left, 0)
		}
	}
	// The holds left that a majority confirms, as Inspect counts them: a
	// node that applied a late copy of an earlier release first may
	// answer one hold more.
	slices.Sort(left)
	remaining := 0
	if len(left) >= e.majority {
		remaining = left[len(left)-e.majority]
	} else if len(left) > 0 {
		remaining = left[0]
	}
	switch {
	case released >= e.majority:
		return engine.ReleaseResult{Status: engine.Released, Remaining: remaining}, nil
	case notHeld >= e.majority && notOwner >= e.majority:
		return engine.ReleaseResult{Status: engine.NotOwner}, nil
	case notHeld >= e.majority:
		return engine.ReleaseResult{Status: engine.NotHeld}, nil
	case released > 0:
		// Mixed answers: a hold was dropped somewhere.
		return engine.ReleaseResult{Status: engine.Released, Remaining: remaining}, nil
	}
	// No majority agrees and no node dropped a hold: the answers ended
	// because too few nodes can still answer for a majority
	// (releaseDecided; with an even count fewer than a majority failing is
	// enough), and the nodes not heard from may hold the grant.
	return engine.ReleaseResult{}, &NoQuorumError{Op: "release", OK: len(e.nodes) - failed, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
}

// token returns the token of a grant from the tokens its holding nodes
// report (token -> nodes): the settled one (settledToken), or with phase 2
// off (WithoutFencing), where no token is aligned anywhere, the one most of
// them report, the highest on a tie.
func (e *Engine) token(tokens map[uint64]int) uint64 {
	if !e.noFencing {
		return settledToken(tokens, e.majority)
	}
	var best uint64
	for tok, n := range tokens {
		if n > tokens[best] || (n == tokens[best] && tok > best) {
			best = tok
		}
	}
	return best
}

// settledToken returns the token a majority of the nodes report (token ->
// nodes), since phase 2 raised it on a majority (or a majority minted it),
// and 0 when no token has a majority yet. A node whose grant answered
// after the decision may keep a token of its own for a while (see
// flight), and phase 2 may not have reached a majority yet: neither may
// change the answer, so a minority's token is never reported.
func settledToken(tokens map[uint64]int, majority int) uint64 {
	for tok, n := range tokens {
		if n >= majority {
			return tok
		}
	}
	return 0
}

// countReleases counts the nodes that released, that answered the owner
// does not hold the lock (free, or held by another owner), and that failed.
func countReleases(rs []result[engine.ReleaseResult]) (released, notHeld, failed int) {
	for _, x := range rs {
		switch {
		case !x.done:
		case x.err != nil:
			failed++
		case x.v.Status == engine.Released:
			released++
		default:
			notHeld++
		}
	}
	return released, notHeld, failed
}

// RaiseFence implements engine.FenceRaiser: true when a majority
// confirmed. When it did not and a node refused the raise
// (engine.CheckRaise: below the token it has, too far ahead), the refusal
// is returned: an *engine.ArgumentError. A refused raise changes nothing
// on the nodes that refused it; a minority whose token was lower may have
// been raised.
//
// Every kind takes the one path (engine.RaiseByKind refuses an unknown
// one): each node raises the hold of r.Kind, and a node that keeps no
// shared locks answers a shared kind with engine.UnsupportedKind.
func (e *Engine) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	if r.Token > engine.MaxToken {
		return false, engine.RaiseAboveMaxError(r.Token)
	}
	return engine.RaiseByKind(ctx, r, e.raiseAll, e.raiseAll)
}

// raiseAll is RaiseFence's one path: every node raises r.
func (e *Engine) raiseAll(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (bool, error) {
		return raiseFence(ctx, n.eng, r)
	}, nil, nil)
	return e.raised("raise-fence", rs)
}

// raised decides a raise from its nodes' answers (RaiseFence, and phase 2
// of a shared grant).
func (e *Engine) raised(op string, rs []result[bool]) (bool, error) {
	ok, failed := 0, 0
	var refused error
	for _, x := range rs {
		var ae *engine.ArgumentError
		switch {
		case x.err != nil && errors.As(x.err, &ae):
			refused = ae
		case x.err != nil:
			failed++
		case x.v:
			ok++
		}
	}
	switch {
	case ok >= e.majority:
		return true, nil
	case refused != nil:
		return false, refused
	case failed > len(e.nodes)-e.majority:
		return false, &NoQuorumError{Op: op, OK: ok, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
	}
	return false, nil
}

// Inspect implements engine.Engine: every node is asked in parallel
// within the per-node timeout (each describes the name whatever its kind);
// a majority must answer, and when some nodes did not, Info.Partial names
// them (a holder reported is then still held on a majority, but a lock
// reported free may be held on a majority that includes them). When a
// majority describe a shared lock, the view is sharedView's, else
// mutexView's.
//
// A node whose answer to one of this engine's grants on the name was still
// out when Acquire returned is asked after that answer (within the
// per-node timeout): an Inspect after Acquire sees the grant on every node
// it reached, not only on the ones that answered first.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	out := e.flights.onName(name)
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (engine.Info, error) {
		for _, f := range out {
			f.seen(ctx, e.index(n))
		}
		return n.eng.Inspect(ctx, name)
	}, nil, nil)
	if errs := nodeErrs(rs); len(e.nodes)-len(errs) < e.majority {
		return engine.Info{}, &NoQuorumError{Op: "inspect", OK: len(e.nodes) - len(errs), Majority: e.majority, Nodes: len(e.nodes), Errs: errs}
	}
	return e.view(name, rs), nil
}

// view is the lock name as the nodes describe it (rs: each node's
// description, or its failure), the one reading of Inspect and List: when
// a majority describe a shared lock, sharedView's, else mutexView's.
func (e *Engine) view(name string, rs []result[engine.Info]) engine.Info {
	shared := 0
	for _, x := range rs {
		if x.err == nil && x.v.Kind.Shared() {
			shared++
		}
	}
	if shared >= e.majority {
		return e.sharedView(name, rs)
	}
	return e.mutexView(name, rs)
}

// mutexView is the mutex the nodes describe (rs): the holder is the owner
// that holds the lock on a majority (if any); its token is the settled one, which a
// majority of the nodes report (0 while no token has a majority: phase 2
// has not reached a majority yet), and its metadata the value most of
// those nodes have (a node among them with no value, one a campaign's
// value has not reached, counts only when a majority of the nodes has
// none); the high-water is the highest any node has, the waiters those a
// majority count (countedQueue). A node that describes a shared lock holds
// no mutex.
func (e *Engine) mutexView(name string, rs []result[engine.Info]) engine.Info {
	info := engine.Info{Name: name}
	votes := map[string]int{}
	for _, x := range rs {
		if x.err != nil {
			continue
		}
		info.HighWater = max(info.HighWater, x.v.HighWater)
		info.Subscribers = max(info.Subscribers, x.v.Subscribers)
		if x.v.Held && !x.v.Kind.Shared() {
			votes[x.v.Owner]++
		}
	}
	info.Partial = partial(e, rs)
	var counts []int
	var ttls []time.Duration
	tokens := map[uint64]int{}
	for _, x := range rs {
		if x.err == nil && x.v.Held && !x.v.Kind.Shared() && votes[x.v.Owner] >= e.majority {
			if !info.Held {
				hw, s, p := info.HighWater, info.Subscribers, info.Partial
				info = x.v
				info.HighWater, info.Subscribers, info.Partial = hw, s, p
				info.Holders = nil // one node's view: rebuilt from the majority's (Client.Inspect)
			}
			tokens[x.v.Token]++
			counts = append(counts, x.v.Count)
			ttls = append(ttls, x.v.TTL)
		}
	}
	info.Token = e.token(tokens)
	info.Waiters, info.Queue = e.countedQueue(rs)
	if info.Held {
		// The value of the nodes that have the settled token: a node
		// whose token is not settled yet may have been read before phase
		// 2 and the announce (an election's value is set after them).
		metadata := map[string]int{}
		for _, x := range rs {
			if x.err == nil && x.v.Held && x.v.Owner == info.Owner && x.v.Token == info.Token {
				metadata[x.v.Metadata]++
			}
		}
		if len(metadata) > 1 && metadata[""] < e.majority {
			// A node the campaign's value has not reached (a grant that
			// landed after the announce) has none, and one node of those
			// that have it may have failed: no value wins only when a
			// majority of the nodes report none.
			delete(metadata, "")
		}
		info.Metadata = commonMetadata(metadata)
	}
	if len(counts) >= e.majority {
		// The holds and the time left that a majority confirms: a
		// release, re-entry or extension may not have reached a minority
		// yet. No expiry (a negative ttl) counts as the longest.
		slices.Sort(counts)
		info.Count = counts[len(counts)-e.majority]
		slices.SortFunc(ttls, func(a, b time.Duration) int { return cmp.Compare(untilExpiry(a), untilExpiry(b)) })
		info.TTL = ttls[len(ttls)-e.majority]
	}
	return info
}

// countedQueue is the number of waiters a quorum's views report, and the
// queue they list: the most waiters a majority of the nodes that answered
// (rs) count, as the holds and the time left are what a majority
// confirms. An entry that has reached a minority only (a waiter's first
// attempt still on its way to the others, a leave some nodes missed) is
// not counted: an attempt a majority decides meanwhile need not be behind
// it, and a waiter counted is one every later grant must pass (any two
// majorities share a node). The queue is one a node that counts that
// many lists, the order most such nodes list (a straggler may have queued
// the same waiters in another order), so the count and the list agree.
func (e *Engine) countedQueue(rs []result[engine.Info]) (int, []engine.Waiter) {
	var counts []int
	for _, x := range rs {
		if x.err == nil {
			counts = append(counts, x.v.Waiters)
		}
	}
	if len(counts) < e.majority {
		return 0, nil
	}
	slices.Sort(counts)
	n := counts[len(counts)-e.majority]
	var queue []engine.Waiter
	votes, best := map[string]int{}, 0
	for _, x := range rs {
		if x.err != nil || x.v.Waiters != n {
			continue
		}
		var ids strings.Builder
		for _, w := range x.v.Queue {
			ids.WriteString(w.ID)
			ids.WriteByte(0)
		}
		k := ids.String()
		if votes[k]++; votes[k] > best {
			best, queue = votes[k], x.v.Queue
		}
	}
	return n, queue
}

// raiseFence runs phase 2 on one node.
func raiseFence(ctx context.Context, eng engine.Engine, r engine.RaiseRequest) (bool, error) {
	fr, ok := eng.(engine.FenceRaiser)
	if !ok {
		return false, errNoRaiseFence
	}
	return fr.RaiseFence(ctx, r)
}

var (
	errNoRaiseFence   = errors.New("engine cannot raise fences (engine.FenceRaiser): use quorum.WithoutFencing")
	errNoForceRelease = errors.New("engine does not support force-release")
	errNoList         = errors.New("engine cannot list")
)

// ForceRelease frees the lock on every node that supports it, in parallel
// within the per-node timeout. It succeeds when a majority freed it (then
// nobody can hold it on a majority until it is granted anew; a node that
// did not answer keeps its copy, a minority's, until its ttl), and reports
// whether any node that answered held it.
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	return e.forceRelease(ctx, func(ctx context.Context, eng engine.Engine) (bool, error) {
		fr, ok := eng.(engine.ForceReleaser)
		if !ok {
			return false, errNoForceRelease
		}
		return fr.ForceRelease(ctx, name)
	})
}

// ForceReleaseHolder implements engine.HolderReleaser: owner's hold is
// freed on every node. It reports whether any node found owner holding.
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	return e.forceRelease(ctx, func(ctx context.Context, eng engine.Engine) (bool, error) {
		fr, ok := eng.(engine.HolderReleaser)
		if !ok {
			return false, errNoForceRelease
		}
		return fr.ForceReleaseHolder(ctx, name, owner)
	})
}

// forceRelease runs free on every node; it reports whether any node's
// lock was held, and a *NoQuorumError when too many failed for a majority
// to have freed it (the nodes that answered are freed all the same).
func (e *Engine) forceRelease(ctx context.Context, free func(context.Context, engine.Engine) (bool, error)) (bool, error) {
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (bool, error) {
		return free(ctx, n.eng)
	}, nil, nil)
	held, failed := 0, 0
	for _, x := range rs {
		if x.err != nil {
			failed++
		} else if x.v {
			held++
		}
	}
	if len(e.nodes)-failed < e.majority {
		return held > 0, &NoQuorumError{Op: "force-release", OK: len(e.nodes) - failed, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
	}
	return held > 0, nil
}

// Close implements engine.Engine: it waits for background clean-ups and
// closes every node.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() { close(e.done) })
	var errs []error
	for _, n := range e.nodes {
		if err := n.eng.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	e.bg.Wait()
	return joinErrs(errs)
}

// untokened returns reqs without their grant tokens: the nodes keep tokens
// of their own (engine.ExtendRequest.Token), which a quorum's token need
// not be.
func untokened(reqs []engine.ExtendRequest) []engine.ExtendRequest {
	out := slices.Clone(reqs)
	for i := range out {
		out[i].Token = 0
	}
	return out
}
