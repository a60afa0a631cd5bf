package distlock

import "time"

// holdKey names the holds of one owner on one lock: the leases a Client
// holds for it (re-entry).
type holdKey struct{ name, owner string }

// coverTTL is the ttl to ask in an extension of l that asks for ttl: at
// least what the owner's other live leases of the lock in this Client need
// (an auto-renewed one its ttl, another its time left). An extension whose
// answer never came (the call gave up; the lock service may apply it
// later) can land after l's release; the lock service then takes it as
// the lone remaining hold's and sets the lock's expiry from its ttl. Asked
// for at least what the other leases need, it cannot cut the lock short
// under them. While the owner holds the lock more than once the lock
// service keeps the later expiry anyway (engine.HoldExpiry), so this
// changes nothing else; the extended lease's own deadline still counts
// from ttl.
func (c *Client) coverTTL(l *Lease, ttl time.Duration) time.Duration {
	c.mu.Lock()
	var others []*Lease
	for o := range c.holds[holdKey{l.name, l.owner}] {
		if o != l {
			others = append(others, o)
		}
	}
	c.mu.Unlock()
	now := time.Now()
	for _, o := range others {
		ttl = max(ttl, o.needs(now))
	}
	return ttl
}

// needs is how long from now the lock service must keep the lock for l:
// its ttl when the watchdog renews it (a renewal may be in flight), else
// its time left; 0 once it ended.
func (l *Lease) needs(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return 0
	case l.autoRenew:
		return max(l.ttl, l.deadline.Sub(now))
	}
	return l.deadline.Sub(now)
}
