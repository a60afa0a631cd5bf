package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// Acquire implements engine.Engine. A call creates its contender's child
// (or refreshes its waiter's child from an earlier attempt), reads the
// whole line, deletes children that have expired, and then:
//
//   - its child is the lowest live one: granted (a waiter's child is
//     confirmed first, so that the lease counts from this call's send time);
//     the token is the child's czxid;
//   - the lowest live child is the owner's own held one: re-entry (or the
//     copy of the grant with the same Attempt); the new child is deleted;
//   - otherwise refused: a waiter's child stays in line (Queued) and turns
//     into a place in line with the waiter's heartbeat ttl; a try's child is
//     deleted.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(ctx); err != nil {
		return engine.Grant{}, err
	}
	if err := e.checkTTL(r.TTL); err != nil {
		return engine.Grant{}, err
	}
	a := attempt{e: e, r: r, k: key{r.Name, r.Waiter}}
	for range maxConflicts {
		g, done, err := a.round(ctx)
		if err != nil || done {
			return g, err
		}
	}
	return engine.Grant{}, conflict("acquire", r.Name)
}

// attempt is one Acquire call's state across its rounds.
type attempt struct {
	e       *Engine
	r       engine.AcquireRequest
	k       key
	own     string // this call's child (new, or the waiter's from before)
	created bool   // own was created by this call, with held data
	ownData data
}

// round runs one read-decide-write round; done is false when another
// client's change got in the way and the round must be run again.
func (a *attempt) round(ctx context.Context) (engine.Grant, bool, error) {
	e, r := a.e, a.r
	if err := a.place(ctx); err != nil {
		return engine.Grant{}, false, err
	}
	l, err := e.read(ctx, r.Name)
	if err != nil {
		return engine.Grant{}, false, err
	}
	if a.own != "" && find(l.kids, a.own) < 0 {
		a.forget() // deleted meanwhile (expired, left, force-released)
		return engine.Grant{}, false, nil
	}
	live, expired := l.live(l.now)
	if len(expired) > 0 {
		return engine.Grant{}, false, e.sweep(ctx, expired)
	}
	if len(live) == 0 {
		return engine.Grant{}, false, nil
	}
	head := live[0]
	switch {
	case head.path == a.own:
		return a.confirm(ctx, head)
	case head.d.Held && head.d.Owner == r.Owner:
		if err := a.withdraw(ctx); err != nil {
			return engine.Grant{}, false, err
		}
		return a.reenter(ctx, head, l.now)
	}
	g := engine.Grant{Holder: head.d.Owner, HolderTTL: left(head.expiry() - l.now)}
	if !head.d.Held {
		g.Holder, g.Reserved = "", true
	}
	if r.Waiter == "" {
		return g, true, a.withdraw(ctx)
	}
	if a.ownData.Held {
		if err := a.queue(ctx); err != nil {
			return engine.Grant{}, false, err
		}
	}
	g.Queued, g.Head = true, find(live, a.own) == 1
	return g, true, nil
}

// place makes sure the call has its child: a waiter's child from an
// earlier attempt is refreshed (which proves the session and moves the
// clock estimate to now); otherwise a new child is created with the
// grant's data, unless this engine saw the owner hold the lock (re-entry
// needs no child).
func (a *attempt) place(ctx context.Context) error {
	e, r := a.e, a.r
	if a.own == "" && r.Waiter != "" {
		if w, ok := e.waiter(a.k); ok {
			a.own, a.ownData = w.path, w.d
			if _, err := e.set(ctx, w.path, w.d.encode(), -1); err != nil {
				if !errors.Is(err, zk.ErrNoNode) {
					return err
				}
				a.forget()
				if w.session != e.conn.SessionID() {
					return ErrSessionExpired
				}
			}
			if a.own != "" {
				return nil
			}
		}
	}
	if a.own != "" || e.holding(key{r.Name, r.Owner}) != "" {
		return nil
	}
	a.ownData = data{Owner: r.Owner, Held: true, TTL: ms(r.TTL), Count: 1, Metadata: r.Metadata, Attempt: r.Attempt}
	session := e.conn.SessionID()
	p, err := e.createChild(ctx, e.namePath(r.Name), r.Owner, r.Waiter, &a.ownData)
	if err != nil {
		return err
	}
	a.own, a.created = p, true
	if r.Waiter != "" {
		e.setWaiter(a.k, waitNode{path: p, session: session, d: a.ownData})
	}
	return nil
}

// confirm grants the lock to the call's own child, the lowest live one.
func (a *attempt) confirm(ctx context.Context, c child) (engine.Grant, bool, error) {
	e, r := a.e, a.r
	token := c.st.Czxid
	if !c.d.Held || !a.created {
		d := data{Owner: r.Owner, Held: true, TTL: ms(r.TTL), Count: 1, Metadata: r.Metadata, Attempt: r.Attempt}
		st, err := e.set(ctx, c.path, d.encode(), c.st.Version)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			return engine.Grant{}, false, nil
		}
		if err != nil {
			return engine.Grant{}, false, err
		}
		token = st.Czxid
	}
	e.dropWaiter(a.k)
	e.setHolding(key{r.Name, r.Owner}, c.path)
	return engine.Grant{Acquired: true, Token: uint64(token), Count: 1}, true, nil
}

// reenter adds a hold to the owner's held child c (or answers the copy
// of its last grant). A child found expired by the write's own clock is
// deleted instead, and the round runs again (a fresh grant).
func (a *attempt) reenter(ctx context.Context, c child, now int64) (engine.Grant, bool, error) {
	e, r := a.e, a.r
	if r.Attempt != "" && c.d.Attempt == r.Attempt {
		e.setHolding(key{r.Name, r.Owner}, c.path)
		return engine.Grant{Acquired: true, Token: uint64(c.st.Czxid), Count: c.d.Count}, true, nil
	}
	d := c.d
	d.Count++
	d.Attempt = r.Attempt
	d.Base, d.TTL = holdExpiry(d.Count, c.expiry(), now, r.TTL)
	st, err := e.set(ctx, c.path, d.encode(), c.st.Version)
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return engine.Grant{}, false, nil
	}
	if err != nil {
		return engine.Grant{}, false, err
	}
	if st.Mtime > c.expiry() {
		// It had expired before this write: not a hold to add to.
		if err := e.del(ctx, c.path, st.Version); err != nil && !verdict(err) {
			return engine.Grant{}, false, err
		}
		e.dropHolding(key{r.Name, r.Owner})
		return engine.Grant{}, false, nil
	}
	e.setHolding(key{r.Name, r.Owner}, c.path)
	return engine.Grant{Acquired: true, Token: uint64(c.st.Czxid), Count: d.Count}, true, nil
}

// holdExpiry returns the Base and TTL fields of a child whose owner now
// has holds holds, that expires at current (ms), written at about now
// (ms, no later than the write): engine.HoldExpiry's rule, with the base
// left to the write's mtime (0) when the expiry moves to the ttl from now.
func holdExpiry(holds int, current, now int64, ttl time.Duration) (base, t int64) {
	t = ms(ttl)
	if holds > 1 && current > now+t {
		return current - t, t
	}
	return 0, t
}

// queue turns the call's new child into a place in line: not held, with
// the waiter's heartbeat ttl.
func (a *attempt) queue(ctx context.Context) error {
	e, r := a.e, a.r
	d := data{Owner: r.Owner, Waiter: r.Waiter, TTL: ms(r.WaiterTTL)}
	if r.WaiterTTL <= 0 {
		d.TTL = ms(r.TTL)
	}
	if _, err := e.set(ctx, a.own, d.encode(), -1); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			a.forget()
			return nil
		}
		return err
	}
	a.ownData, a.created = d, false
	if w, ok := e.waiter(a.k); ok {
		w.d = d
		e.setWaiter(a.k, w)
	}
	return nil
}

// withdraw deletes the call's child, if it has one.
func (a *attempt) withdraw(ctx context.Context) error {
	if a.own == "" {
		return nil
	}
	err := a.e.del(ctx, a.own, -1)
	a.forget()
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// forget drops the call's child from its state and the engine's.
func (a *attempt) forget() {
	a.e.dropWaiter(a.k)
	a.own, a.created, a.ownData = "", false, data{}
}

// sweep deletes expired children, each only at the version it was read at
// (a child renewed meanwhile stays).
func (e *Engine) sweep(ctx context.Context, expired []child) error {
	for _, c := range expired {
		if err := e.del(ctx, c.path, c.st.Version); err != nil && !verdict(err) {
			return err
		}
	}
	return nil
}
