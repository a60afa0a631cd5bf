package client

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock"
)

// Leader is a Lease that is a leadership of an election (Config.Elect):
// Token is the term, Release resigns.
type Leader interface {
	Lease
	// Ignores is how long the leader goes on acting after its
	// leadership's Context ended: 0 for a leader that stops then, the
	// negative control's grace otherwise.
	Ignores() time.Duration
}

// campaign waits until elected leader of name (Campaign, value: the
// client's id) and returns the leadership. A leader that honours its loss
// signal acts only while its leadership's Context is not done; the
// control (ImplIgnoreLoss) keeps acting for ignore after the loss.
func (l *libLocker) campaign(ctx context.Context, name string) (Lease, error) {
	ld, err := l.c.Campaign(ctx, name, l.value, distlock.WithTTL(l.ttl))
	if err != nil {
		return nil, err
	}
	return &leaderLease{l: ld, ignore: l.ignore}, nil
}

// leaderLease adapts *distlock.Leadership.
type leaderLease struct {
	l *distlock.Leadership
	// ignore > 0: the control leader, which goes on acting for ignore
	// after its leadership ended (a loop that checks its status now and
	// then, or never looks at Done).
	ignore time.Duration
}

func (x *leaderLease) Token() uint64          { return x.l.Term() }
func (x *leaderLease) Owner() string          { return x.l.Lease().Owner() }
func (x *leaderLease) Deadline() time.Time    { return x.l.Lease().Deadline() }
func (x *leaderLease) Done() <-chan struct{}  { return x.l.Done() }
func (x *leaderLease) Ignores() time.Duration { return max(x.ignore, 0) }

func (x *leaderLease) Release(ctx context.Context) error { return x.l.Resign(ctx) }

// Valid: a leader acts only while its leadership's Context is not done;
// the control also for ignore after the loss.
func (x *leaderLease) Valid() (ok, over bool) {
	if x.l.Context().Err() == nil {
		return true, false
	}
	if x.ignore > 0 {
		if at, _, lost := x.Loss(); lost && time.Since(at) < x.ignore {
			return true, false
		}
	}
	return false, true
}

func (x *leaderLease) Loss() (time.Time, string, bool) {
	var lost *distlock.LostError
	if errors.As(x.l.Err(), &lost) {
		return lost.At, lost.Cause.String(), true
	}
	return time.Time{}, "", false
}
