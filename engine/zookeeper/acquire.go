package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// acquireMutex is Acquire for a mutex. A call reads the name's line, judges
// it at the clock estimate the reading gives (no later than the ensemble's
// clock), deletes children that have expired, and then:
//
//   - the owner's own child holds: re-entry (or the copy of the grant with
//     the same Attempt);
//   - another owner holds: refused; a waiter keeps (or takes) its place in
//     line, an ephemeral sequential child in arrival order;
//   - the lock is free: granted unless a place in line comes first (the
//     lock reserved for the head after a release, a fair head, or a call
//     asking to stay behind). A grant is one transaction: the holder's
//     child created (persistent: it lives by its lease, not by this
//     engine's session) (the waiter's place deleted) and the name node's data
//     written at the version read with the line, so that of two grants
//     decided on one reading only one takes effect. The token is the
//     holder child's czxid, the grant transaction's zxid.
//
// A grant or a deletion judged at the reading's clock estimate is right at
// the ensemble's clock too (what looks expired at an earlier time has
// expired). A re-entry (its expiry is reckoned from now) and a refusal are
// judged again at the ensemble's clock, read by a write (the waiter's
// place rewritten, which also proves its session, or the root's data):
// the reading's estimate may lag without bound (a dead holder writes
// nothing). A refusal of a call that does not wait, and a kind refusal,
// are final: they are decided on a line read after a catch-up (catchUp).
func (e *Engine) acquireMutex(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
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
	place   waitNode // the waiter's place in line (path "": none)
	clocked bool     // this round's decision is at the ensemble's clock (needClock)
	enter   bool     // the clock is to come with the waiter's new place (refuse)
	// A shared lock's request (kind 0: a mutex's): the kind and weight its
	// place in line and its holder's child carry.
	kind     engine.Kind
	weight   int
	caughtUp bool // a refusal brought the session's member up to date (catchUpOnce)
}

// round runs one read-decide-write round; done is false when another
// client's change got in the way and the round must be run again.
func (a *attempt) round(ctx context.Context) (engine.Grant, bool, error) {
	if g, done, err := a.handOff(ctx); err != nil || done {
		return g, done, err
	}
	l, err := a.readLine(ctx)
	if err != nil || l.path == "" {
		return engine.Grant{}, false, err
	}
	return a.decided(ctx, &l, a.decide)
}

// handOff grants the mutex to the head of the line without reading the
// line first, when the waiter's watch saw its place head the line and the
// name node's last event a release (the hand-off after a release costs
// the grant's transaction alone). The grant is the usual one, written at
// the version the watch read, with the absence of a kind record checked
// in the same transaction (a node created and deleted: the transaction
// fails if it exists). At that version no holder can be live: every grant
// writes the name node, so the release was written after the last grant,
// and only a shared lock (never without its kind record) has more than
// one holder to release. No place comes before the head's, and places
// come in arrival order. When the version or the kind record says
// otherwise, the transaction changes nothing and the line is read as
// usual.
func (a *attempt) handOff(ctx context.Context) (engine.Grant, bool, error) {
	if a.r.Waiter == "" || a.kind != 0 {
		return engine.Grant{}, false, nil
	}
	if a.place.path == "" {
		a.place, _ = a.e.waiter(a.k)
	}
	h, ok := a.e.takeHead(a.k)
	if !ok || a.place.path == "" || h.place != a.place.path {
		return engine.Grant{}, false, nil
	}
	e := a.e
	kp := e.kindPath(a.r.Name)
	l := line{path: e.namePath(a.r.Name), parent: &zk.Stat{Version: h.version}}
	return a.grantWith(ctx, &l, evGranted,
		&zk.CreateRequest{Path: kp, Acl: zk.WorldACL(zk.PermAll)}, &zk.DeleteRequest{Path: kp, Version: -1})
}

// decide is round's decision on the line l at the clock estimate now.
func (a *attempt) decide(ctx context.Context, l *line, now int64) (engine.Grant, bool, error) {
	e, r := a.e, a.r
	line, expired := l.waiters(now)
	if marks := l.expiredMarks(now); len(expired) > 0 || len(marks) > 0 {
		return engine.Grant{}, false, e.sweep(ctx, l, expired, marks)
	}
	if hs, _ := l.shared(now); len(hs) > 0 {
		return engine.Grant{}, false, a.kindRefused(ctx, engine.KindError(r.Name, hs[0].d.Kind, 0))
	}
	if w, ok := otherKindWaiter(line, a.place.path, engine.Mutex); ok {
		// A shared lock's waiters queue: they bind the name to its kind.
		return engine.Grant{}, false, a.kindRefused(ctx, engine.KindError(r.Name, w.d.Kind, 0))
	}
	if h, ok := l.holder(now); ok {
		if h.d.Owner == r.Owner {
			if err := a.leave(ctx); err != nil {
				return engine.Grant{}, false, err
			}
			return a.reenter(ctx, h, now)
		}
		return a.refuse(ctx, engine.Grant{Holder: h.d.Owner, HolderTTL: left(h.expiry() - now)}, line)
	}
	if len(line) > 0 && line[0].path != a.place.path {
		head := line[0]
		until, ok, err := e.reservedFor(ctx, l, head)
		if errors.Is(err, errLineChanged) {
			return engine.Grant{}, false, nil
		}
		if err != nil {
			return engine.Grant{}, false, err
		}
		if ok {
			if now < until {
				return a.refuse(ctx, engine.Grant{Reserved: true, HolderTTL: left(until - now)}, line)
			}
			// The head did not take the lock reserved for it: it leaves
			// the line, and the next head is tried.
			return engine.Grant{}, false, e.drop(ctx, l, head)
		}
		if head.d.Fair || r.Order.Yields() {
			return a.refuse(ctx, engine.Grant{Reserved: true, HolderTTL: left(head.expiry() - now)}, line)
		}
	}
	return a.grant(ctx, l)
}

// otherKindWaiter returns the head of the live line, unless it is the
// caller's own place (own, "" for none), when it waits for another kind
// than kind: a shared lock's waiter for a mutex, a mutex's waiter for a
// shared lock. Queued waiters bind a name to their kind, as holders do:
// the caller is refused with engine.KindError. The head's kind tells the
// line's: a line holds places of one kind (the other kind is refused
// while one waits), and only the head's data (and the caller's own) is
// read for a decision.
func otherKindWaiter(line []child, own string, kind engine.Kind) (child, bool) {
	if len(line) == 0 {
		return child{}, false
	}
	w := line[0]
	if w.path == own || w.st == nil || (w.d.Kind == engine.Mutex) == (kind == engine.Mutex) {
		return child{}, false
	}
	return w, true
}

// mutexWaiterHeads reports whether a live mutex waiter heads the line l
// at now, other than own's place: it binds the name to the mutex, and a
// shared lock's request (an acquire, a SetLimit) is refused. A head whose
// reservation lapsed is no longer one: it leaves the line (as the mutex's
// decide drops it), and again is true: the caller reads the line again,
// as it is when the line changed meanwhile.
func (e *Engine) mutexWaiterHeads(ctx context.Context, l *line, own string, now int64) (heads, again bool, err error) {
	live, _ := l.waiters(now)
	w, ok := otherKindWaiter(live, own, engine.Semaphore)
	if !ok {
		return false, false, nil
	}
	until, reserved, err := e.reservedFor(ctx, l, w)
	switch {
	case errors.Is(err, errLineChanged):
		return false, true, nil
	case err != nil:
		return false, false, err
	case reserved && now >= until:
		return false, true, e.drop(ctx, l, w)
	}
	return true, false, nil
}

// readLine reads the attempt's line ("" path: the round runs again). A
// place in line found gone went with an expired session (the wait ends:
// ErrSessionExpired) or was deleted (expired, or dropped after a
// reservation lapsed: the round runs again without it).
func (a *attempt) readLine(ctx context.Context) (line, error) {
	a.clocked = false
	if a.place.path == "" && a.r.Waiter != "" {
		a.place, _ = a.e.waiter(a.k)
	}
	l, err := a.e.readLine(ctx, a.r.Name, a.place.path, decisionChildren)
	if err != nil {
		return line{}, err
	}
	if a.place.path != "" && find(l.kids, a.place.path) < 0 {
		return line{}, a.placeGone()
	}
	return l, nil
}

// placeGone forgets the attempt's place, found gone: ErrSessionExpired
// when it went with an earlier session.
func (a *attempt) placeGone() error {
	session := a.place.session
	a.forget()
	if session != a.e.conn.SessionID() {
		return ErrSessionExpired
	}
	return nil
}

// errNeedClock asks decided for the ensemble's clock: the decision may
// not be taken on the reading's estimate.
var errNeedClock = errors.New("zookeeper: decision needs the ensemble's clock")

// needClock returns errNeedClock unless the round's decision is at the
// ensemble's clock already.
func (a *attempt) needClock() error {
	if a.clocked {
		return nil
	}
	return errNeedClock
}

// decided runs decide on l at the reading's clock estimate, and again at
// the ensemble's clock when it asks for it (errNeedClock).
func (a *attempt) decided(ctx context.Context, l *line, decide func(context.Context, *line, int64) (engine.Grant, bool, error)) (engine.Grant, bool, error) {
	now := l.now
	for {
		g, done, err := decide(ctx, l, now)
		if !errors.Is(err, errNeedClock) {
			return g, done, err
		}
		c, err := a.clockNow(ctx)
		if err != nil || c == 0 {
			return engine.Grant{}, false, err
		}
		now, a.clocked = max(now, c), true
	}
}

// clockNow returns the ensemble's clock: the mtime of a rewrite of the
// waiter's place (a heartbeat; it proves the session), or of the root's
// data. 0: the place went meanwhile (the round runs again).
func (a *attempt) clockNow(ctx context.Context) (int64, error) {
	if a.enter {
		// A refusal of a waiter without a place: the place is taken
		// with the clock, in one transaction.
		a.enter = false
		if c, err := a.takePlace(ctx); err != nil || c > 0 {
			return c, err
		}
	}
	if a.place.path == "" {
		return a.e.clock(ctx)
	}
	sent := time.Now()
	st, err := a.e.set(ctx, a.place.path, a.place.d.encode(), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, a.placeGone()
	}
	if err != nil {
		return 0, err
	}
	a.place.wrote = sent
	a.e.wroteWaiter(a.k, a.place.path, sent)
	return st.Mtime, nil
}

// refuse answers g, with the waiter's place in line taken when it has none.
// A call that does not wait is answered only from a line known to be
// current: the first time, the round runs again after a catch-up (see
// catchUpOnce), so that a member behind another does not refuse a lock
// released a moment before through it. A waiting call's refusal is not
// final and needs no catch-up: it waits on watches set on its
// member, which fire when the member applies the release, and its place's
// creation brings the member up to date. Its first attempt (no waiter id
// yet) is answered from the reading alone: the wait tries again at once.
// A waiter's place is created in the transaction that reads the clock.
func (a *attempt) refuse(ctx context.Context, g engine.Grant, line []child) (engine.Grant, bool, error) {
	r := a.r
	if r.Waiter == "" && r.Waiting {
		// The first attempt of a waiting call: not final, and the wait
		// tries again at once (with its place in line, and the clock).
		return g, true, nil
	}
	if r.Waiter == "" && !a.caughtUp {
		return engine.Grant{}, false, a.catchUpOnce(ctx)
	}
	if a.behind(line) {
		g.Queued, g.Head = true, false
		return g, true, nil
	}
	if err := a.needClock(); err != nil {
		a.enter = r.Waiter != "" && a.place.path == ""
		return engine.Grant{}, false, err
	}
	if r.Waiter == "" {
		return g, true, nil
	}
	if a.place.path == "" {
		if _, err := a.takePlace(ctx); err != nil {
			return engine.Grant{}, false, err
		}
	}
	if find(line, a.place.path) < 0 {
		line = append(line, child{path: a.place.path})
	}
	g.Queued, g.Head = true, line[0].path == a.place.path
	return g, true, nil
}

// behind reports whether the refused waiter's place has another before it
// in line, and was written less than a sixth of its heartbeat ttl ago: the
// refusal is then answered at the reading's clock estimate, without a
// clock write. Its time left is not used (a waiter behind the head waits
// for its wake-up: the place before it going, or its heartbeat's word),
// the place in the listing shows its session alive, and the Client, which
// counts the attempt as a heartbeat, sends the next one within a third of
// the ttl of the attempt: within half the ttl of the place's latest write.
// (A waiter woken by the name's changes before it took its place makes
// such an attempt after nearly every grant.)
func (a *attempt) behind(line []child) bool {
	if a.r.Waiter == "" || a.place.path == "" || find(line, a.place.path) <= 0 {
		return false
	}
	ttl := a.r.WaiterTTL
	if ttl <= 0 {
		ttl = a.r.TTL
	}
	return time.Since(a.place.wrote) < ttl/6
}

// takePlace creates the waiter's place in line (an ephemeral sequential
// child: its arrival order) and returns the ensemble's clock: the
// transaction also writes the root's data, whose mtime it answers (0 when
// the answer was lost and the place found by its GUID).
func (a *attempt) takePlace(ctx context.Context) (int64, error) {
	e, r := a.e, a.r
	d := data{Owner: r.Owner, Waiter: r.Waiter, TTL: ms(r.WaiterTTL), Fair: r.Order == engine.OrderFair, NoReserve: r.Order == engine.OrderNoReserve, Kind: a.kind, Weight: a.weight}
	if r.WaiterTTL <= 0 {
		d.TTL = ms(r.TTL)
	}
	parent := e.namePath(r.Name)
	prefix := childPrefix(r.Owner, tag(r.Waiter))
	session := e.conn.SessionID()
	sent := time.Now()
	p, err := e.protectedCreate(ctx, parent, prefix, func() (placed, error) {
		res, err := e.conn.Multi(&zk.CreateRequest{Path: parent + "/" + prefix, Data: d.encode(), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral | zk.FlagSequence},
			&zk.SetDataRequest{Path: e.root, Version: -1})
		if err != nil {
			return placed{}, err
		}
		return placed{path: res[0].String, parent: res[1].Stat}, nil
	}, func(p placed) { _ = e.conn.Delete(p.path, -1) })
	if err != nil {
		return 0, err
	}
	a.place = waitNode{path: p.path, session: session, d: d, wrote: sent}
	e.setWaiter(a.k, a.place)
	if p.parent == nil {
		return 0, nil
	}
	return p.parent.Mtime, nil
}

// grant takes the free lock: one transaction creates the holder's child
// (a persistent sequential node: see grantWith), deletes the waiter's
// place and writes the name node's event at the version read with the
// line.
func (a *attempt) grant(ctx context.Context, l *line) (engine.Grant, bool, error) {
	return a.grantWith(ctx, l, evGranted)
}

// grantWith is grant writing the event ev, with the request's kind and
// weight in the holder's child, and the checks in extra among the
// transaction's operations (a shared lock's stored limit at the version
// read).
func (a *attempt) grantWith(ctx context.Context, l *line, ev string, extra ...any) (engine.Grant, bool, error) {
	e, r := a.e, a.r
	if l.parent == nil {
		return engine.Grant{}, false, e.ensure(ctx, l.path, containerNode)
	}
	d := data{Owner: r.Owner, Held: true, TTL: ms(r.TTL), Count: 1, Metadata: r.Metadata, Attempt: r.Attempt, Kind: a.kind, Weight: a.weight}
	prefix := childPrefix(r.Owner, heldTag)
	ops := append([]any{
		// Persistent: the holder's child lives by its lease, not by this
		// engine's session (a lease is handed on: Attach, a re-entry
		// elsewhere, the CLI's acquire that exits). An expired one goes
		// with the next reading of the line (sweep).
		&zk.CreateRequest{Path: l.path + "/" + prefix, Data: d.encode(), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: l.path, Data: event{Kind: ev}.encode(), Version: l.parent.Version},
	}, extra...)
	if a.place.path != "" {
		ops = append(ops, &zk.DeleteRequest{Path: a.place.path, Version: -1})
	}
	p, err := e.protectedCreate(ctx, l.path, prefix, func() (placed, error) {
		res, err := e.conn.Multi(ops...)
		if err != nil {
			return placed{}, err
		}
		return placed{path: res[0].String, parent: res[1].Stat}, nil
	}, func(p placed) { e.undoGrant(p.path) })
	if changedMeanwhile(err) {
		return engine.Grant{}, false, nil
	}
	if err != nil {
		return engine.Grant{}, false, err
	}
	var st *zk.Stat
	if p.parent != nil {
		// The child's stat: the grant's zxid and time, version 0.
		st = &zk.Stat{Czxid: p.parent.Mzxid, Mzxid: p.parent.Mzxid, Ctime: p.parent.Mtime, Mtime: p.parent.Mtime}
	} else if _, st, err = e.get(ctx, p.path); err != nil {
		return engine.Grant{}, false, err
	}
	// The grant's time is the ensemble's clock: the force-release marks
	// whose freed lease ended by then go (the reading's estimate may have
	// been too early to tell; marks are rare, and nobody needs them any
	// more).
	for _, m := range l.expiredMarks(st.Mtime) {
		_ = e.del(ctx, m.path, m.st.Version)
	}
	a.forget()
	e.setHolding(key{r.Name, r.Owner}, child{path: p.path, d: d, st: st})
	return engine.Grant{Acquired: true, Token: uint64(st.Czxid), Count: 1}, true, nil
}

// undoGrant frees a grant whose caller gave up before its answer.
func (e *Engine) undoGrant(path string) {
	parent := path[:lastSlash(path)]
	_, _ = e.conn.Multi(&zk.DeleteRequest{Path: path, Version: -1},
		&zk.SetDataRequest{Path: parent, Data: event{Kind: evReleased}.encode(), Version: -1})
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return 0
}

// reenter adds a hold to the owner's held child c (or answers the copy
// of its last grant). A child found expired by the write's own clock is
// deleted instead, and the round runs again (a fresh grant).
func (a *attempt) reenter(ctx context.Context, c child, now int64) (engine.Grant, bool, error) {
	e, r := a.e, a.r
	if r.Attempt != "" && c.d.Attempt == r.Attempt {
		e.setHolding(key{r.Name, r.Owner}, c)
		return engine.Grant{Acquired: true, Token: uint64(c.st.Czxid), Count: c.d.Count}, true, nil
	}
	if err := a.needClock(); err != nil {
		// The new expiry is judged against now: an estimate behind the
		// ensemble's clock could keep an expiry nearer than the re-entry's
		// ttl from now, which the Client counts on.
		return engine.Grant{}, false, err
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
		c.st = st
		return engine.Grant{}, false, e.free(ctx, c)
	}
	e.setHolding(key{r.Name, r.Owner}, child{path: c.path, d: d, st: st})
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

// leave deletes the call's place in line, if it has one.
func (a *attempt) leave(ctx context.Context) error {
	if a.place.path == "" {
		return nil
	}
	err := a.e.del(ctx, a.place.path, -1)
	a.forget()
	return ignoreNoNode(err)
}

// forget drops the call's place from its state and the engine's.
func (a *attempt) forget() {
	a.e.dropWaiter(a.k)
	a.place = waitNode{}
}

// sweep deletes expired children, each only at the version it was read at
// (a child renewed meanwhile stays); a holder's deletion is a release, and
// a dead head's passes the reservation on (dropHead). A holder's child is
// persistent (it outlives its grant's session), so the sweep of whoever
// reads the line is what removes an expired one. It deletes the expired
// force-release marks too (marks: the freed leases ended, nobody can be
// told by them any more).
func (e *Engine) sweep(ctx context.Context, l *line, expired []child, marks []mark) error {
	for _, m := range marks {
		if err := e.del(ctx, m.path, m.st.Version); err != nil && !verdict(err) {
			return err
		}
	}
	head := l.firstPlace()
	for _, c := range expired {
		var err error
		switch {
		case c.d.Held:
			err = e.free(ctx, c)
		case c.path == head:
			_, err = e.dropHead(ctx, l, c)
		default:
			err = e.del(ctx, c.path, c.st.Version)
		}
		if err != nil && !verdict(err) {
			return err
		}
	}
	return nil
}

// dropHead deletes the place c that heads the line l (an expired one, or
// one that leaves). After a release (the lock reserved for c:
// reservedFor) the release is recorded again with the deletion (passOn),
// so that the next head's reservation counts from now: the first one's
// lapsing must not drop a live fair waiter that has had no time to take
// the lock. done is false when the line or c changed since it was read
// (nothing is changed then); otherwise the name node is checked at the
// version read, released or not.
func (e *Engine) dropHead(ctx context.Context, l *line, c child) (done bool, err error) {
	ev, _, err := e.eventOf(ctx, l)
	if errors.Is(err, errLineChanged) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ev.Kind == evReleased {
		return e.passOn(ctx, l, c)
	}
	// Not released as read, checked in the deletion's transaction: a
	// reading from a member that had not yet applied a release (another
	// session's) must not delete a reserved head without passing its
	// reservation on. A failed check changes nothing; the caller reads
	// again, and the member answers the check's failure only once it has
	// applied what came before it.
	_, err = e.multi(ctx, &zk.DeleteRequest{Path: c.path, Version: c.st.Version},
		&zk.CheckVersionRequest{Path: l.path, Version: l.parent.Version})
	if verdict(err) {
		return false, nil
	}
	return err == nil, err
}

// free deletes the held child c at the version read and records the
// release in the name node (which reserves the lock for the head of the
// line, and wakes the subscribers).
func (e *Engine) free(ctx context.Context, c child) error {
	_, err := e.multi(ctx, &zk.DeleteRequest{Path: c.path, Version: c.st.Version},
		&zk.SetDataRequest{Path: c.path[:lastSlash(c.path)], Data: event{Kind: evReleased}.encode(), Version: -1})
	return err
}

// drop deletes the head of the line whose reservation lapsed and records
// a release again, which reserves the lock for the next head (passOn).
func (e *Engine) drop(ctx context.Context, l *line, head child) error {
	_, err := e.passOn(ctx, l, head)
	return err
}

// passOn deletes the head of the line l and records a release again, each
// at the version read (a head that wrote its place since stays), in one
// transaction: a reservation for the next head, counted from now. done is
// false when either changed since it was read (nothing is changed then).
func (e *Engine) passOn(ctx context.Context, l *line, head child) (done bool, err error) {
	_, err = e.multi(ctx, &zk.DeleteRequest{Path: head.path, Version: head.st.Version},
		&zk.SetDataRequest{Path: l.path, Data: event{Kind: evReleased}.encode(), Version: l.parent.Version})
	if verdict(err) {
		return false, nil
	}
	return err == nil, err
}
