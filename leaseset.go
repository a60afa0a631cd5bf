package distlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// LeaseSet is one hold of several locks, granted together by AcquireAll or
// TryAcquireAll: one Lease per name, each with its own fencing token, and
// one signal for the set. When any member is lost (or released), Done is
// closed, Context is cancelled and Err returns that member's error (a
// *LostError names the lock that was lost); after a loss the other
// members are no longer renewed, and lapse at their ttl unless Release
// comes first. The members' renewals travel in the Client's watchdog
// batches together: one Extend round trip per node and tick for the whole
// set. Release releases every member, in one round trip where the engine
// can.
//
// A LeaseSet is safe for concurrent use.
type LeaseSet struct {
	c       *Client
	members []*Lease          // sorted by name
	byName  map[string]*Lease // the same, by name
	ctx     context.Context   // cancelled when a member ends, with its Err as the cause
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	released bool
}

// newLeaseSet makes the set of members (sorted by name, each tracked and
// started), bound to their ends (end), with their renewals lined up so
// that the watchdog sends them in one batch.
func newLeaseSet(c *Client, ctx context.Context, members []*Lease) *LeaseSet {
	s := &LeaseSet{c: c, members: members, byName: make(map[string]*Lease, len(members))}
	s.ctx, s.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	sched := members[0].renewTimes()
	for _, l := range members[1:] {
		sched = sched.earliest(l.renewTimes())
	}
	c.renew.align(members, sched)
	for _, l := range members {
		s.byName[l.name] = l
		l.notify(s.end)
	}
	return s
}

// end is called when a member ends: the set ends with that member's
// error, and when the member was lost the watchdog stops renewing the
// others. A set is held whole or not at all: members renewed after one was
// lost would keep others out for as long as the code takes to call
// Release (forever, should it never). They stay held until Release or
// their ttl, whichever comes first; the set does not release them itself,
// for a release by their owner could drop the hold of another lease of
// that owner (Attach). A member released alone (Lease(name).Release)
// leaves the others as they are.
func (s *LeaseSet) end(cause error) {
	s.cancel(cause)
	var lost *LostError
	if !errors.As(cause, &lost) {
		return
	}
	// Called under the ending member's l.mu (Lease.end): the watchdog,
	// which takes its own lock and then each lease's, is told through
	// each member's flag, not its lock.
	for _, l := range s.members {
		l.unrenewed.Store(true)
	}
}

// renewTimes returns the lease's renewal schedule.
func (l *Lease) renewTimes() schedule {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewal
}

// renewAlong moves the lease's next renewal earlier, to s: the members of
// a set are renewed together from their first renewal on (they were
// granted at different times when taken one by one). The watchdog calls
// it for every member at once (align).
func (l *Lease) renewAlong(s schedule) {
	l.mu.Lock()
	l.renewal = l.renewal.earliest(s)
	l.mu.Unlock()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Names returns the names of the set, sorted.
func (s *LeaseSet) Names() []string {
	names := make([]string, len(s.members))
	for i, l := range s.members {
		names[i] = l.name
	}
	return names
}

// Token returns the fencing token of the member name (0 when name is not
// in the set). Each is its name's own: strictly increasing from grant to
// grant of that name, as every Lease's.
func (s *LeaseSet) Token(name string) uint64 {
	if l := s.byName[name]; l != nil {
		return l.token
	}
	return 0
}

// Tokens returns the fencing token of every member, by name.
func (s *LeaseSet) Tokens() map[string]uint64 {
	t := make(map[string]uint64, len(s.members))
	for _, l := range s.members {
		t[l.name] = l.token
	}
	return t
}

// Owner returns the owner token of the member name ("" when name is not in
// the set): with it, Client.Attach rebuilds that member's lease elsewhere.
func (s *LeaseSet) Owner(name string) string {
	if l := s.byName[name]; l != nil {
		return l.owner
	}
	return ""
}

// Lease returns the lease of the member name (nil when name is not in the
// set): its token, owner and deadline, and Extend of that member alone.
// Releasing it, or losing it, ends the whole set (Done, Err), as for any
// member.
func (s *LeaseSet) Lease(name string) *Lease { return s.byName[name] }

// Deadline returns the earliest local validity deadline of the members.
func (s *LeaseSet) Deadline() time.Time {
	d := s.members[0].Deadline()
	for _, l := range s.members[1:] {
		d = minTime(d, l.Deadline())
	}
	return d
}

// Done returns a channel that is closed when the set ends: a member lost
// or released. It checks every member's deadline first, as Lease.Done does.
func (s *LeaseSet) Done() <-chan struct{} {
	s.current()
	return s.ctx.Done()
}

// Err returns nil while every member is held, and otherwise the error of
// the member that ended first: a *LostError naming the lock that was lost
// (matching ErrLeaseLost), or ErrReleased.
func (s *LeaseSet) Err() error { return s.current() }

// Context returns a context that is cancelled when the set ends, with Err
// as its cause. It carries the values of the context that acquired the
// set, not its cancellation, and checks the members' deadlines as
// Lease.Context does.
func (s *LeaseSet) Context() context.Context { return &leaseContext{Context: s.ctx, l: s} }

// current implements checked: it ends the members whose deadline passed
// and returns the set's Err.
func (s *LeaseSet) current() error {
	for _, l := range s.members {
		l.current()
	}
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// label implements checked.
func (s *LeaseSet) label() string { return "distlock.LeaseSet(" + s.members[0].name + ", ...)" }

// bind returns a context derived from parent that is also cancelled when
// the set ends (its cause: Err), for DoAll.
func (s *LeaseSet) bind(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	return &leaseContext{Context: ctx, l: s}, func() {
		stop()
		cancel(nil)
	}
}

// Release releases every member: in one round trip per node where the
// engine can (engine.MultiReleaser: memory, Redis, etcd, PostgreSQL, a
// server), else each member as
// Lease.Release in parallel; never inheriting ctx's cancellation, bounded
// by the Client's release timeout, and sent again within it after a
// backend error that may pass (as Lease.Release). It returns the members'
// errors joined:
// nil when every member was held and released. Later calls return
// ErrReleased and send nothing.
func (s *LeaseSet) Release(ctx context.Context) error {
	if ctx == nil {
		return &ArgumentError{Arg: "context", Reason: "nil"}
	}
	s.mu.Lock()
	done := s.released
	s.released = true
	s.mu.Unlock()
	if done {
		return ErrReleased
	}
	if mr, ok := s.c.eng.(engine.MultiReleaser); ok {
		return releaseBatch(ctx, mr, s.members)
	}
	return releaseLeases(ctx, s.members)
}

// releaseBatch releases leases in one ReleaseMulti call, sent again after
// a backend error that may pass while every member's owner is a one-off
// one (always: a set's members take random owners), as Client.release
// sends a lease's.
func releaseBatch(ctx context.Context, mr engine.MultiReleaser, leases []*Lease) error {
	var rs []engine.ReleaseRequest
	var sent []*Lease
	var prevs, skipped []error
	for _, l := range leases {
		prev, done := l.halt()
		switch {
		case done == nil:
			rs = append(rs, l.releaseRequest())
			sent, prevs = append(sent, l), append(prevs, prev)
		case done != ErrReleased:
			skipped = append(skipped, done) // released by its end (WithMaxHold)
		}
	}
	if len(sent) == 0 {
		if len(skipped) > 0 {
			return errors.Join(skipped...)
		}
		return ErrReleased // every member was released before (Client.Close)
	}
	c := leases[0].c
	rctx, cancel := c.releaseContext(ctx)
	defer cancel()
	var res []engine.ReleaseResult
	send := func(ctx context.Context, copy int) (err error) {
		at := time.Now()
		res, err = mr.ReleaseMulti(ctx, rs)
		if err == nil && copy > 0 && len(res) == len(sent) {
			for i, l := range sent {
				res[i] = l.settled(res[i], at)
			}
		}
		return err
	}
	var err error
	if slices.ContainsFunc(sent, func(l *Lease) bool { return !l.oneOff }) {
		err = send(rctx, 0)
	} else {
		err = c.resend(rctx, send) // as Lease.Release's copies (Client.release)
	}
	if err == nil && len(res) != len(sent) {
		err = errShortReply
	}
	errs := make([]error, len(sent))
	for i, l := range sent {
		var r engine.ReleaseResult
		if err == nil {
			r = res[i]
		}
		errs[i] = l.released(r, err, prevs[i])
	}
	return errors.Join(append(skipped, errs...)...)
}

// releaseLeases releases leases in parallel and joins their errors.
func releaseLeases(ctx context.Context, leases []*Lease) error {
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Release(ctx)
		}()
	}
	wg.Wait()
	if !slices.ContainsFunc(errs, func(err error) bool { return err != ErrReleased }) {
		return ErrReleased // every member was released before (Client.Close)
	}
	return errors.Join(errs...)
}
