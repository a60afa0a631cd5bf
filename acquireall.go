package distlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// MaxSetSize is the most names one AcquireAll, TryAcquireAll or DoAll
// takes.
const MaxSetSize = 64

// AcquireAll waits until every lock of names is granted to the caller, or
// ctx ends, and returns them as one LeaseSet: all or nothing. The caller
// never holds part of the set: when the call fails (ctx ended, the Client
// closed, a backend failed) every queue it entered is left and every name
// it took is released before it returns, each release given
// 500 ms, as a wait gets to leave its queue (a release not answered by then goes on in
// the background until the backend answers); a set that lost a member
// while it waited for the next is given back and taken again.
//
// It first asks for the whole set in one atomic step where the engine can
// (engine.MultiAcquirer: memory, Redis when every name is on one node,
// etcd up to 32 names, PostgreSQL in one function call, a server in one
// request when its engine can):
// granted when every name is free and nobody queues for it, one round
// trip. Otherwise, and on engines that cannot, it takes the names one by
// one in sorted order, each as Acquire does (entering the name's waiter
// queue, WithFair honoured), holding the names already taken while it
// waits for the next. Every set goes in the same order, so sets that share
// names never wait for each other in a cycle: no deadlock. See
// docs/API.md, "Sets of locks".
//
// Options apply to every member (WithTTL, WithAutoRenew, WithMetadata,
// WithFair); WithOwner is refused: the members' owners are random ones
// (one for the whole set where the engine grants it in one step, one per
// member where the set is taken name by name: LeaseSet.Owner). Names must
// be distinct, 1 to MaxSetSize of them;
// bad input is an *ArgumentError and changes nothing. When ctx ends, the
// error is Acquire's *WaitError for the name the set was waiting for.
func (c *Client) AcquireAll(ctx context.Context, names []string, opts ...Option) (*LeaseSet, error) {
	return c.acquireAll(ctx, names, opts, waitForIt)
}

// TryAcquireAll makes one attempt at the whole set, all or nothing. When a
// name is held by another owner (or kept for the waiters queued for it) it
// returns that name's *LockedError (matching ErrLocked), having taken
// nothing and entered no queue. Its input is checked as AcquireAll's.
func (c *Client) TryAcquireAll(ctx context.Context, names []string, opts ...Option) (*LeaseSet, error) {
	return c.acquireAll(ctx, names, opts, tryOnce)
}

// DoAll acquires every lock of names (waiting as AcquireAll does), runs fn
// under them and releases them, as Do does for one lock: fn's context is
// cancelled when ctx ends or any member is lost, and the error joins fn's,
// the loss and a failed release. If fn panics, the set is released and the
// panic goes on.
func (c *Client) DoAll(ctx context.Context, names []string, fn func(ctx context.Context) error, opts ...Option) error {
	if fn == nil {
		return &ArgumentError{Arg: "fn", Reason: "nil"}
	}
	s, err := c.AcquireAll(ctx, names, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, s, fn)
}

// checkSet checks the names of a set and returns them sorted; it changes
// nothing.
func (c *Client) checkSet(ctx context.Context, names []string) ([]string, error) {
	switch {
	case len(names) == 0:
		return nil, &ArgumentError{Arg: "names", Reason: "empty: a set needs at least one name"}
	case len(names) > MaxSetSize:
		return nil, &ArgumentError{Arg: "names", Reason: fmt.Sprintf("%d names; a set takes at most %d", len(names), MaxSetSize)}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for i, name := range sorted {
		if err := c.check(ctx, name); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1] == name {
			return nil, &ArgumentError{Arg: "names", Reason: fmt.Sprintf("%q appears more than once", name)}
		}
	}
	return sorted, nil
}

// acquireAll is AcquireAll (waitForIt) or TryAcquireAll (tryOnce).
func (c *Client) acquireAll(ctx context.Context, names []string, opts []Option, p policy) (*LeaseSet, error) {
	sorted, err := c.checkSet(ctx, names)
	if err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	if err := c.checkOptions(&o); err != nil {
		return nil, err
	}
	if o.owner != "" {
		return nil, &ArgumentError{Arg: "owner", Reason: "WithOwner is not for sets: their members take random owners"}
	}
	if p == waitForIt && o.fair && !engine.CapabilitiesOf(c.eng).Fair {
		return nil, &UnsupportedError{Feature: "WithFair", Engine: c.node, Reason: "the engine keeps no waiter queue that can be fair"}
	}
	if err := c.begin(ctx, sorted[0]); err != nil {
		return nil, err
	}
	defer c.endCall()
	// obs: each member's acquire, observed from the set's first step on
	// (nil: not started yet, the name-by-name calls start their own).
	var obs []observation
	if ma, ok := c.eng.(engine.MultiAcquirer); ok {
		start := time.Now()
		obs = c.startMembers(ctx, sorted, o, p == waitForIt)
		s, err := c.acquireAtomic(ctx, ma, sorted, o, obs)
		var locked *LockedError
		switch {
		case s != nil:
			return s, nil
		case p == tryOnce && errors.Is(err, engine.ErrNotAtomic):
			// Name by name, below.
		case p == waitForIt && ctxErr(ctx) != nil && !errors.Is(err, ErrInvalidArgument):
			// The wait ended during its first step: the *WaitError a
			// wait ends with, as the name-by-name path's Acquire gives.
			err = &WaitError{Name: sorted[0], Waited: time.Since(start), Ctx: ctxErr(ctx), Last: err}
			return nil, c.membersFailed(sorted, obs, sorted[0], err)
		case p == tryOnce || errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrClosed) || ctxErr(ctx) != nil:
			blocking := sorted[0]
			if errors.As(err, &locked) {
				blocking = locked.Name
			}
			return nil, c.membersFailed(sorted, obs, blocking, err)
		case errors.As(err, &locked):
			// Refused for contention, after the engine judged every
			// name's kind: wait, one name at a time.
			return c.acquireOrdered(ctx, sorted, opts, p, obs)
		}
		// Not atomic here, or the attempt failed: name by name, below.
	}
	if err := c.otherKind(ctx, sorted); err != nil {
		if obs != nil {
			return nil, c.membersFailed(sorted, obs, sorted[0], err)
		}
		return nil, err
	}
	return c.acquireOrdered(ctx, sorted, opts, p, obs)
}

// startMembers starts the observation of each member's acquire (sorted's
// order) for a set's one-step attempt, as the name-by-name path's calls
// start theirs: the one-step grant is each member's, and when the set
// goes on name by name each member's call takes its observation over
// (acquireOrdered).
func (c *Client) startMembers(ctx context.Context, sorted []string, o options, wait bool) []observation {
	obs := make([]observation, len(sorted))
	for i, name := range sorted {
		obs[i] = c.startObservation(ctx, name, o, wait)
	}
	return obs
}

// membersFailed ends the members' observations of a set that gave up with
// err: each member's acquire ends with err, and the Observer hears one
// AcquireFailed, the blocking name's (the name refused, or the set's first
// name), as the name-by-name path reports the name it gave up on. It
// returns err.
func (c *Client) membersFailed(sorted []string, obs []observation, blocking string, err error) error {
	for i := range obs {
		waited := time.Since(obs[i].start)
		obs[i].end(nil, err, waited)
		if sorted[i] == blocking {
			c.obs.AcquireFailed(blocking, waited, err)
		}
	}
	return err
}

// acquireAtomic asks for the set in one step. It returns the set, or the
// refusal (the blocking name's *LockedError), or the failure; an
// engine.ErrNotAtomic when the engine cannot take these names at once.
//
// obs are the members' observations (startMembers): their stamps go into
// the members' metadata, and a grant ends each as the name-by-name path's
// Acquire ends its own (EndAcquire, the hold's observation, Acquired).
func (c *Client) acquireAtomic(ctx context.Context, ma engine.MultiAcquirer, sorted []string, o options, obs []observation) (*LeaseSet, error) {
	owner := c.owners.Next()
	rs := make([]engine.AcquireRequest, len(sorted))
	for i, name := range sorted {
		rs[i] = engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, OneOff: true, TTL: o.ttl, Metadata: o.metadata}
		obs[i].stampInto(o, &rs[i])
	}
	start := time.Now()
	mg, err := sendSettled(c, ctx, func(ctx context.Context) (engine.MultiGrant, error) {
		return ma.AcquireMulti(ctx, rs)
	}, func(mg engine.MultiGrant, err error) {
		if err == nil && mg.Acquired || err != nil && !isArgument(err) && !engine.IsPermanent(c.eng, err) {
			for _, name := range sorted {
				c.cleanup(undo(name, owner, engine.Mutex), o.ttl) // side by side: each may retry
			}
		}
	})
	switch {
	case errors.Is(err, engine.ErrNotAtomic):
		return nil, err
	case err != nil && (isArgument(err) || engine.IsPermanent(c.eng, err) || errors.Is(err, errAbandoned)):
		return nil, c.backendErr(ctx, "acquire", sorted[0], err)
	case err != nil:
		// The set may have been granted all the same (a lost reply).
		for _, name := range sorted {
			c.cleanup(undo(name, owner, engine.Mutex), o.ttl)
		}
		return nil, c.backendErr(ctx, "acquire", sorted[0], err)
	case !mg.Acquired:
		if mg.Blocked < 0 || mg.Blocked >= len(sorted) {
			return nil, &BackendError{Op: "acquire", Name: sorted[0], Node: c.node, Err: errShortReply}
		}
		g := mg.Grant
		return nil, &LockedError{Name: sorted[mg.Blocked], TTL: g.HolderTTL, Queued: g.Reserved}
	case len(mg.Tokens) != len(sorted):
		for _, name := range sorted {
			c.cleanup(undo(name, owner, engine.Mutex), o.ttl)
		}
		return nil, &BackendError{Op: "acquire", Name: sorted[0], Node: c.node, Err: errShortReply}
	}
	members := make([]*Lease, len(sorted))
	for i, name := range sorted {
		members[i] = newLease(c, ctx, name, owner, mg.Tokens[i], o, start, start)
	}
	if !c.skipValidity && !time.Now().Before(start.Add(o.ttl-drift(o.ttl))) {
		err = &BackendError{Op: "acquire", Name: sorted[0], Node: c.node, Err: errValidityUsedUp}
	} else if !c.trackAll(members) {
		err = ErrClosed
	}
	if err != nil {
		for _, name := range sorted {
			c.cleanup(undo(name, owner, engine.Mutex), o.ttl)
		}
		return nil, err
	}
	for i, l := range members {
		// Told before the lease starts, so that no end of it comes first.
		waited := time.Since(obs[i].start)
		obs[i].end(l, nil, waited)
		c.obs.Acquired(l.name, waited, false)
		l.start()
	}
	return newLeaseSet(c, ctx, members), nil
}

// trackAll registers the leases of a set, all or none (none when the
// Client is closed).
func (c *Client) trackAll(leases []*Lease) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	for _, l := range leases {
		c.leases[l] = struct{}{}
	}
	return true
}

// acquireOrdered takes the names one by one in sorted order (Acquire under
// waitForIt, TryAcquire under tryOnce), and on the first failure gives
// back what it took (giveBack: nothing stays held, and Acquire left each
// queue it entered). A set that lost a member while it waited for the
// next (expired, force-released and taken) is not returned: its members
// are given back and, under waitForIt, the set is taken again from its
// first name; under tryOnce the lost member's *LockedError is returned.
// Its caller has refused a name held as a shared lock first (otherKind,
// or the engine's one-step set), before any name is taken or waited for.
//
// obs, when not nil, are the members' observations started for the set's
// one-step attempt: each member's first call takes its own over, and
// those of members never reached end with the set's error.
func (c *Client) acquireOrdered(ctx context.Context, sorted []string, opts []Option, p policy, obs []observation) (*LeaseSet, error) {
	for {
		members := make([]*Lease, 0, len(sorted))
		for i, name := range sorted {
			var ob observation
			if obs != nil {
				ob = obs[i]
			}
			l, err := c.observedAs(ctx, name, opts, p, &ob)
			if err != nil {
				for j := i + 1; j < len(obs); j++ {
					obs[j].end(nil, err, time.Since(obs[j].start))
				}
				giveBackAll(members)
				return nil, err
			}
			members = append(members, l)
		}
		obs = nil // a set taken again is observed afresh
		if len(members) == 1 {
			return newLeaseSet(c, ctx, members), nil
		}
		lost := c.lostMember(ctx, members)
		if lost == nil {
			return newLeaseSet(c, ctx, members), nil
		}
		giveBackAll(members)
		if p == tryOnce {
			return nil, &LockedError{Name: lost.name}
		}
	}
}

// otherKind returns the kind error (an *ArgumentError) of the first of
// sorted that is held as a shared lock (a semaphore's permit, an RWMutex's
// hold), as the engine's one-step sets refuse it: at once, ahead of
// contention on another name, changing nothing. It costs one Inspect per
// name, in parallel, on the name-by-name path only where no one-step set
// judged the kinds (an engine without one, a set it cannot take at once). The names are inspected in
// parallel; a name whose Inspect fails is left to its acquire, as is a
// name that becomes a shared lock afterwards (its acquire refuses it
// then).
func (c *Client) otherKind(ctx context.Context, sorted []string) error {
	kinds := make([]engine.Kind, len(sorted))
	var wg sync.WaitGroup
	for i, name := range sorted {
		wg.Go(func() {
			if info, err := c.eng.Inspect(ctx, name); err == nil && info.Held && info.Kind.Shared() {
				kinds[i] = info.Kind
			}
		})
	}
	wg.Wait()
	for i, k := range kinds {
		if k.Shared() {
			return argumentFrom(engine.KindError(sorted[i], k, engine.Mutex))
		}
	}
	return nil
}
