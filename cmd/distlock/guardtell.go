package main

import "time"

// deadlineTeller tells a command's guard the deadlines of its lease while
// the command runs: at the start, then whenever a renewal moved the
// deadline, checked every tenth of the ttl (guardTellEvery). The guard
// stops the group itself if distlock, stopped or hung, has not done so
// when the last deadline told has passed by the allowance (see guard).
type deadlineTeller struct {
	g         *guard
	lease     holding
	told      time.Time     // the last deadline told
	allowance time.Duration // told with each deadline
	tick      *time.Ticker
}

// tellDeadlines arms ch's guard with ch's process group and the lease's
// deadline now, and returns the teller that tells it the later ones
// (update on each tick; stop when done).
func tellDeadlines(ch *child, lease holding) *deadlineTeller {
	told := lease.Deadline()
	every := guardTellEvery(time.Until(told))
	t := &deadlineTeller{g: ch.guard, lease: lease, told: told, allowance: max(every, guardMinAllowance), tick: time.NewTicker(every)}
	ch.guard.arm(ch, time.Until(told), t.allowance)
	return t
}

// ticks is when to call update.
func (t *deadlineTeller) ticks() <-chan time.Time { return t.tick.C }

// update tells the guard the lease's deadline if a renewal moved it.
func (t *deadlineTeller) update() {
	if d := t.lease.Deadline(); d.After(t.told) {
		t.told = d
		t.g.tell(time.Until(d), t.allowance)
	}
}

func (t *deadlineTeller) stop() { t.tick.Stop() }

// guardTellEvery is how often the teller checks the lease's deadline, for
// a lease of ttl: a tenth of it, from 5ms to 250ms.
func guardTellEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 5*time.Millisecond), 250*time.Millisecond)
}

// guardMinAllowance is the least time past the lease's deadline that the
// guard gives distlock to stop the command itself (the allowance is the
// telling period, at least this): a distlock that is merely slow to be
// scheduled is not mistaken for a stopped one.
const guardMinAllowance = 50 * time.Millisecond

// terminateLost sends SIGTERM to the command's group after the lease was
// lost, and tells the guard that distlock is stopping the group itself
// (the guard sends no SIGTERM of its own then).
func (c *child) terminateLost() {
	c.terminate()
	c.guard.stopping()
}
