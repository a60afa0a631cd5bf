package lab

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/distlock/distlock/safety/history"
)

// electFaults (17): one fault on the election's leader, chosen at random,
// right after its check before a write (the leader is whoever writes: only
// leaders touch the resource). The fault windows carry the classes of the
// lock scenarios they copy, so that the checks treat them alike (a class-1
// target is a stopped client for I6).
func electFaults(ctx context.Context, e *env) {
	ev, ok := e.waitChecked(ctx, anyClient)
	if !ok {
		return
	}
	s := e.slotOf(ev.Client)
	if s == nil {
		return
	}
	p := s.current()
	if p == nil || p.exited() {
		return
	}
	ttl := e.spec.TTL
	id := ev.Client
	switch e.rng.IntN(4) {
	case 0: // paused past its leadership's end
		d := e.between(2*ttl, 5*ttl/2)
		start := time.Now()
		e.pause(p, id)
		time.Sleep(d)
		p.signal(syscall.SIGCONT)
		e.fault(1, id, fmt.Sprintf("leader SIGSTOP %v", d.Round(time.Millisecond)), start, time.Now())
	case 1: // crashed
		now := time.Now()
		p.kill()
		e.rec.Add(history.Event{Kind: history.KindClientExit, Client: id, At: history.Mono(now), Detail: "SIGKILL"})
		e.fault(12, id, "leader SIGKILL", now, now)
		time.Sleep(ttl / 2)
		if err := e.startSlot(s, true); err != nil {
			e.logf("restart client: %v", err)
		}
	case 2: // cut from the lock service
		nodes := []int{0}
		if e.spec.Mode.Redlock {
			nodes = e.majority()
		}
		start := time.Now()
		var heals []func()
		for _, i := range nodes {
			h, err := s.links[i].BlackHole()
			if err != nil {
				e.logf("black hole: %v", err)
				continue
			}
			heals = append(heals, h)
		}
		time.Sleep(2 * ttl)
		for _, h := range heals {
			h()
		}
		e.fault(5, id, fmt.Sprintf("leader's links to nodes %v black-holed", nodes), start, time.Now())
	case 3: // connections reset mid-command
		l := s.links[e.rng.IntN(len(s.links))]
		dir := Up
		if e.rng.IntN(2) == 0 {
			dir = Down
		}
		start := time.Now()
		heal, err := l.Reset(dir)
		if err != nil {
			e.logf("reset: %v", err)
			return
		}
		time.Sleep(ttl / 4)
		heal()
		e.fault(11, id, fmt.Sprintf("reset_peer %s on the leader's node%d link", dir, l.Node), start, time.Now())
	}
}
