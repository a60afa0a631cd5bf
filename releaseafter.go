package distlock

import (
	"context"
	"time"
)

// ReleaseAfter ends the lease now and leaves the lock held for d more,
// then to expire: it sets the hold's time to live to d (one request, as
// Extend does, naming the grant's token), stops renewing it and sends no
// release. The lease ends as released: Err returns ErrReleased, Done
// closes, the Client's Close leaves the lock be, and an Observer sees a
// release (not a loss). It is a minimum hold: a job that ran shorter than
// the schedulers' tick skew keeps other schedulers from running the same
// tick again (package gocronlock's Locker uses it).
//
// d below MinTTL releases at once (Release); a negative d is an
// *ArgumentError and changes nothing. d is fitted to the engine's ttl
// bounds as WithTTL's ttl is (etcd: whole seconds, at least 2 s), and
// raised so as not to cut short another hold of the lease's owner on the
// lock (re-entry). When the lock service refuses (the lease was lost) the
// error matches ErrNotHeld, as Extend's; when it fails, the error matches
// ErrBackend and the lease stays held and renewed, as before the call,
// with its deadline no later than d's from the send time (the ttl may have
// been set and its answer lost; Extend's rule).
func (l *Lease) ReleaseAfter(ctx context.Context, d time.Duration) error {
	switch {
	case ctx == nil:
		return &ArgumentError{Arg: "context", Reason: "nil"}
	case d < 0:
		return &ArgumentError{Arg: "d", Reason: "negative: " + d.String()}
	case d < MinTTL:
		return l.Release(ctx)
	}
	o := options{ttl: d}
	if err := l.c.checkOptions(&o); err != nil {
		return err
	}
	// No renewal in flight from here on (the watchdog leaves the lease
	// out while this extension is marked), so none lands after the last
	// ttl is set.
	if err := l.claim(ctx); err != nil {
		return err
	}
	defer l.settle()
	if err := l.heldErr(); err != nil {
		return err
	}
	sent, sentTTL := time.Now(), l.c.coverTTL(l, o.ttl)
	res, err := l.c.extendOne(ctx, l.extendRequest(sentTTL))
	if err != nil {
		l.extendFailed(sent, sentTTL, err)
		l.settleExtend() // the watchdog renews it again, soon
		return l.c.backendErr(ctx, "extend", l.name, err)
	}
	l.answer(res, sent, o.ttl, nil)
	if err := l.heldErr(); err != nil {
		return err
	}
	// Ended here as released, with nothing sent: the lock expires by
	// itself at the ttl just set.
	if _, done := l.stop(); done != nil {
		return done
	}
	return nil
}
