package distlock

import (
	"context"
	"sync"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/waiting"
)

// giveBack releases the lease for a caller that gives it up without
// having handed it out (a set that failed, or lost a member while it
// waited for the next). The release is sent at once, bounded by
// waiting.LeaveTimeout as a wait's leaving of its queue is, so that the
// caller returns in time on a backend that stalls; a release not answered
// in that time (or failed) goes on in the background as an abandoned
// grant's undo does (Client.dropHold: tried again, its "not held"
// confirmed once the backend answers, Close waiting for it), so the name
// is not left held until its ttl.
func (l *Lease) giveBack() {
	prev, done := l.halt()
	if done != nil {
		return // released already, or nothing to send
	}
	r := l.releaseRequest()
	ctx, cancel := context.WithTimeout(context.Background(), min(l.c.releaseTimeout, waiting.LeaveTimeout))
	res, err := l.c.eng.Release(ctx, r)
	cancel()
	_ = l.released(res, err, prev) // the Observer hears the answer
	if err == nil || isArgument(err) || engine.IsPermanent(l.c.eng, err) {
		return // answered (released, or not held any more)
	}
	l.c.cleanup(r, l.TTL())
}

// giveBackAll gives back every lease of leases (giveBack), side by side.
func giveBackAll(leases []*Lease) {
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(l.giveBack)
	}
	wg.Wait()
}

// lostMember returns the first of a set's members (mutexes, taken one by
// one) that the set no longer holds, or nil: one its lease knows lost (its
// deadline passed while the set waited for the next name), or one the
// lock service says another grant holds now (force-released and taken, a
// loss its lease would learn only at its next renewal, where the reading
// shows the holder's owner). The members are
// read side by side, one Inspect each; a member whose read fails is left
// to its lease's renewals.
func (c *Client) lostMember(ctx context.Context, members []*Lease) *Lease {
	lost := make([]bool, len(members))
	var wg sync.WaitGroup
	for i, l := range members {
		if l.Err() != nil {
			lost[i] = true
			continue
		}
		wg.Go(func() {
			info, err := c.eng.Inspect(ctx, l.name)
			// Another owner holds it, or nobody does. (A server hides
			// owners from tokens below admin: there only the latter
			// shows. Tokens are not compared: a quorum's reading may
			// differ from its grant's.)
			lost[i] = err == nil && (!info.Held || info.Owner != "" && info.Owner != l.owner)
		})
	}
	wg.Wait()
	for i, l := range members {
		if lost[i] {
			return l
		}
	}
	return nil
}
