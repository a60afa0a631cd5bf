package lab

import (
	"context"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/safety/check"
	"github.com/distlock/distlock/safety/history"
)

// The Sentinel scenario's deployment: a master, one replica and three
// sentinels (redistest.NewSentinel); the clients reach the master through
// go-redis failover clients (client.Config.Sentinel), without proxies, and
// the resource is a redis-server of its own behind their proxies as in the
// other Redis runs.

// SentinelFailoverID is the Sentinel failover scenario.
const SentinelFailoverID = 28

// startSentinel starts the run's Sentinel deployment.
func (e *env) startSentinel() error {
	g, err := redistest.NewSentinel()
	if err != nil {
		return err
	}
	e.sentinel = g
	return nil
}

// SentinelTTL is the ttl of the Sentinel runs: a stale holder must still
// hold a valid lease when the failover ends (SENTINEL FAILOVER takes a
// second or two), so that the fenced resource is asked by both holders.
const SentinelTTL = 4 * time.Second

// sentinelCut bounds how long the replica stays paused: below
// redistest.SentinelDownAfter, after which the sentinels would not pick it.
const sentinelCut = 6 * time.Second

// sentinelFailover (28): once per run, while a holder works, the replica
// is cut off (paused, its link dropped on the master) until the master has
// made a grant it never receives (a token above the high-water at the
// cut) and that grant's holder, a process, has written to the fenced
// resource; at its next lease check the holder is SIGSTOPped, the master
// SIGKILLed, the replica resumed and failed over to (SENTINEL FAILOVER),
// and the clients' failover clients move to it. The promoted replica never
// saw that grant: the lock is free there (two holders until the stale
// lease ends, which I1 does not claim here), and its high-water is stale.
// Once a new holder's first fenced apply was answered, the stale holder is
// resumed and sends the write its lease check allowed. With the time floor
// (the default) the new token is above the stale holder's: the fenced
// resource accepts the new holder and refuses the stale write. The control
// (NoTimeFloor) counts up from the stale high-water: the resource refuses
// the new holder (RefusedNewer) and accepts the stale write (Superseded),
// and I3 sees the inversion.
func sentinelFailover(ctx context.Context, e *env) {
	g := e.sentinel
	if g == nil || e.failedOver {
		return
	}
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	start := time.Now()
	e.failedOver = true
	admin, cancel := context.WithTimeout(context.Background(), sentinelCut)
	defer cancel()
	if err := g.CutReplica(admin); err != nil {
		e.logf("cut the replica: %v", err)
	}
	cut, _ := g.Master.Client().Get(admin, "distlock:{"+e.name+"}:fence").Uint64()
	// A grant minted after the cut, its holder's fenced write, and its
	// next lease check, where it is stopped.
	lost, ok := e.awaitEvent(admin, func(ev history.Event) bool {
		return ev.Kind == history.KindAcquire && ev.Result == history.OK && ev.Token > cut
	})
	var stopped *proc
	if ok {
		if _, ok = e.awaitEvent(admin, func(ev history.Event) bool {
			return ev.Kind == history.KindWrite && ev.Res == history.Fenced && ev.Result == history.Accepted && ev.Owner == lost.Owner
		}); ok {
			checked := e.rec.Watch(func(ev history.Event) bool { return ev.Kind == history.KindChecked && ev.Owner == lost.Owner })
			select {
			case <-checked:
				if s := e.slotOf(lost.Client); s != nil {
					if stopped = s.current(); stopped != nil {
						e.pause(stopped, lost.Client)
					}
				}
			case <-admin.Done():
			}
		}
	}
	stopAt := time.Now()
	if err := g.Master.Kill(); err != nil {
		e.logf("kill the master: %v", err)
	}
	if err := g.Replica.Resume(); err != nil {
		e.logf("resume the replica: %v", err)
	}
	foCtx, cancelFO := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelFO()
	if err := g.FailoverContext(foCtx); err != nil {
		e.logf("failover: %v", err)
	}
	over := history.Mono(time.Now())
	e.fault(SentinelFailoverID, "master", "replica cut off, master SIGKILLed, failover to the replica; lost grant to "+lost.Client, start, time.Now(), "master", "replica")
	if stopped == nil {
		return
	}
	// A holder granted after the failover, and its first fenced apply's
	// answer; then the stale holder goes on.
	wait, cancelWait := context.WithTimeout(context.Background(), 3*e.spec.TTL)
	defer cancelWait()
	if next, ok := e.awaitEvent(wait, func(ev history.Event) bool {
		return ev.Kind == history.KindAcquire && ev.Result == history.OK && ev.Complete > over
	}); ok {
		e.awaitEvent(wait, func(ev history.Event) bool {
			return (ev.Kind == history.KindRead || ev.Kind == history.KindWrite) && ev.Res == history.Fenced &&
				ev.Owner == next.Owner && (ev.Result == history.Accepted || ev.Result == history.Rejected)
		})
	}
	stopped.signal(syscall.SIGCONT)
	e.fault(check.ClassPauseHolder, lost.Client, "SIGSTOP across the failover", stopAt, time.Now())
}

// awaitEvent returns the first event recorded that matches, whether before
// the call or until ctx ends.
func (e *env) awaitEvent(ctx context.Context, match func(history.Event) bool) (history.Event, bool) {
	ch := e.rec.Watch(match)
	for _, ev := range e.rec.Events() {
		if match(ev) {
			return ev, true
		}
	}
	select {
	case ev := <-ch:
		return ev, true
	case <-ctx.Done():
		return history.Event{}, false
	}
}
