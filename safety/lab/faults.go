package lab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/safety/history"
)

// Every injector waits for its trigger while ctx lasts, then injects one
// fault and always heals it before returning (its own sleeps ignore ctx, so
// nothing is left broken when the run ends).

// pause SIGSTOPs the process client id and returns once it is stopped
// (proc.pause); a stop that takes longer than pauseTimeout is logged.
func (e *env) pause(p *proc, id string) {
	if err := p.pause(); err != nil {
		e.logf("pause %s: %v", id, err)
	}
}

// pauseHolder (1): SIGSTOP the process client right after its lease check.
func pauseHolder(ctx context.Context, e *env) {
	pauseHolderFor(ctx, e, 2*e.spec.TTL, 5*e.spec.TTL/2)
}

// pauseHolderFor SIGSTOPs the process client c0 right after its lease
// check for a random time in [lo, hi), then SIGCONT.
func pauseHolderFor(ctx context.Context, e *env, lo, hi time.Duration) {
	s := e.slots[0]
	if _, ok := e.waitChecked(ctx, func(c string) bool { return c == s.id() }); !ok {
		return
	}
	p := s.current()
	d := e.between(lo, hi)
	start := time.Now()
	e.pause(p, s.id())
	time.Sleep(d)
	p.signal(syscall.SIGCONT)
	e.fault(1, s.id(), fmt.Sprintf("SIGSTOP %v", d.Round(time.Millisecond)), start, time.Now())
}

// delayClient (2): hold back, inside a goroutine client, the replies of its
// next grant, or of the first renewal of its next hold.
func delayClient(ctx context.Context, e *env) {
	ttl := e.spec.TTL
	renewal := e.rng.IntN(2) == 1
	switch e.spec.Control {
	case NoValidity:
		renewal = false
	case FromReply:
		renewal = true
	}
	targets := e.slots[1:] // the goroutine clients
	applied := e.rec.Watch(func(ev history.Event) bool { return ev.Kind == history.KindFault && ev.Class == 2 })
	disarm := func() {
		for _, s := range targets {
			s.worker.Slow().DelayExtend(0)
			s.worker.Slow().DelayAcquire(0)
		}
	}
	if renewal {
		// The first renewal of the next hold comes back late (after the
		// key expired when d > 2/3 ttl), while the hold (at least 2 ttl)
		// still runs.
		d := e.between(4*ttl/5, 3*ttl/2)
		granted := e.rec.Watch(func(ev history.Event) bool {
			if ev.Kind != history.KindAcquire || ev.Result != history.OK {
				return false
			}
			s := e.slotOf(ev.Client)
			return s != nil && s.worker != nil
		})
		select {
		case ev := <-granted:
			e.slotOf(ev.Client).worker.Slow().DelayExtend(d)
		case <-ctx.Done():
			return
		}
	} else {
		// Whichever goroutine client is granted the lock next.
		d := e.between(6*ttl/5, 2*ttl)
		for _, s := range targets {
			s.worker.Slow().DelayAcquire(d)
		}
	}
	select {
	case <-applied: // the client recorded the window itself
	case <-ctx.Done():
	}
	disarm()
}

// nodeLatency (3): latency on node links, of the holder or of everyone.
func nodeLatency(ctx context.Context, e *env) {
	ttl := e.spec.TTL
	var links []*Link
	target := "all"
	if e.rng.IntN(2) == 0 {
		ev, ok := e.waitChecked(ctx, anyClient)
		if !ok {
			return
		}
		target = ev.Client
		if s := e.slotOf(ev.Client); s != nil {
			links = s.links
		}
	} else {
		for _, s := range e.slots {
			links = append(links, s.links...)
		}
	}
	lat := e.between(3*ttl/10, ttl)
	start := time.Now()
	var heals []func()
	for _, l := range links {
		h, err := l.Latency(lat, lat/10, Up, Down)
		if err != nil {
			e.logf("latency: %v", err)
			continue
		}
		heals = append(heals, h)
	}
	time.Sleep(2 * ttl)
	for _, h := range heals {
		h()
	}
	e.fault(3, target, fmt.Sprintf("latency %v each way on %d links", lat.Round(time.Millisecond), len(heals)), start, time.Now())
}

// slowWrite (4): delay a holder's writes to the resource past its lease.
func slowWrite(ctx context.Context, e *env) {
	ev, ok := e.waitChecked(ctx, anyClient)
	if !ok {
		return
	}
	s := e.slotOf(ev.Client)
	if s == nil {
		return
	}
	ttl := e.spec.TTL
	lat := 2 * ttl
	start := time.Now()
	heal, err := s.res.Latency(lat, 0, Up)
	if err != nil {
		e.logf("slow write: %v", err)
		return
	}
	time.Sleep(lat + ttl/2) // everything sent meanwhile is due by then
	heal()
	e.fault(4, ev.Client, fmt.Sprintf("resource link latency %v", lat), start, time.Now())
}

// majority returns the node indexes of a majority, at random.
func (e *env) majority() []int {
	n := len(e.nodes)
	return e.pick(n, n/2+1)
}

// partitionHolder (5): black-hole the holder's links to a majority.
func partitionHolder(ctx context.Context, e *env) {
	ev, ok := e.waitChecked(ctx, anyClient)
	if !ok {
		return
	}
	s := e.slotOf(ev.Client)
	if s == nil {
		return
	}
	nodes := e.majority()
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
	time.Sleep(2 * e.spec.TTL)
	for _, h := range heals {
		h()
	}
	e.fault(5, ev.Client, fmt.Sprintf("black hole to nodes %v", nodes), start, time.Now())
}

// skewLua moves a node's fencing high-water of a lock to the node's time
// plus ARGV[1] seconds, as if its clock jumped (tokens are seeded from it),
// and, with ARGV[2] = "1", expires the lock key at once.
const skewLua = `
local t = redis.call('TIME')
local ahead = (tonumber(t[1]) + tonumber(ARGV[1])) * 1000000 + tonumber(t[2])
local hw = tonumber(redis.call('GET', KEYS[2]) or '0')
if hw < ahead then
  redis.call('SET', KEYS[2], string.format('%.0f', ahead), 'PX', 604800000)
end
if ARGV[2] == '1' then
  return redis.call('PEXPIRE', KEYS[1], 1)
end
return 0`

// jump runs skewLua on node i.
func (e *env) jump(i int, ahead time.Duration, expire bool) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	flag := "0"
	if expire {
		flag = "1"
	}
	keys := []string{"distlock:{" + e.name + "}", "distlock:{" + e.name + "}:fence"}
	return e.admin[i].Eval(ctx, skewLua, keys, int(ahead.Seconds()), flag).Int64()
}

// minorityDown (6): node 0 runs 30 s ahead; then node 0 (and perhaps one
// more) is stopped or cut off for 1.5 ttl.
func minorityDown(ctx context.Context, e *env) {
	ttl := e.spec.TTL
	if !sleep(ctx, e.between(0, ttl/2)) {
		return
	}
	now := time.Now()
	if _, err := e.jump(0, 30*time.Second, false); err != nil {
		e.logf("skew: %v", err)
	}
	e.fault(6, "node0", "clock 30 s ahead (fencing high-water)", now, now)
	time.Sleep(ttl / 2) // grants with node 0 take its tokens
	down := []int{0}
	if e.rng.IntN(2) == 0 {
		down = append(down, 1+e.rng.IntN(len(e.nodes)-1))
	}
	start := time.Now()
	how := "SIGSTOP"
	var heals []func()
	if e.rng.IntN(2) == 0 {
		for _, i := range down {
			if err := e.nodes[i].Pause(); err != nil {
				e.logf("pause: %v", err)
				continue
			}
			heals = append(heals, func() { _ = e.nodes[i].Resume() })
		}
	} else {
		how = "proxies down"
		for _, s := range e.slots {
			for _, i := range down {
				up := s.links[i].TakeDown()
				heals = append(heals, func() {
					if err := up(); err != nil {
						e.logf("proxy up: %v", err)
					}
				})
			}
		}
	}
	time.Sleep(3 * ttl / 2)
	for _, h := range heals {
		h()
	}
	var servers []string
	for _, i := range down {
		servers = append(servers, fmt.Sprintf("node%d", i))
	}
	e.fault(6, fmt.Sprintf("nodes %v", down), how, start, time.Now(), servers...)
}

// nodePaused (7): one node SIGSTOPped or CLIENT PAUSEd.
func nodePaused(ctx context.Context, e *env) {
	ttl := e.spec.TTL
	if !sleep(ctx, e.between(0, ttl/2)) {
		return
	}
	i := e.rng.IntN(len(e.nodes))
	d := e.between(ttl/2, 3*ttl/2)
	start := time.Now()
	how := "SIGSTOP"
	if e.rng.IntN(2) == 0 {
		if err := e.nodes[i].Pause(); err != nil {
			e.logf("pause: %v", err)
			return
		}
		time.Sleep(d)
		_ = e.nodes[i].Resume()
	} else {
		how = "CLIENT PAUSE ALL"
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		err := e.admin[i].Do(c, "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err()
		cancel()
		if err != nil {
			e.logf("client pause: %v", err)
			return
		}
		time.Sleep(d + 5*time.Millisecond)
	}
	e.fault(7, fmt.Sprintf("node%d", i), fmt.Sprintf("%s %v", how, d.Round(time.Millisecond)), start, time.Now())
}

// notPoller matches the clients that wait by notification: while one of
// them holds the lock, the poller (slot 2) is free to pounce on a lost key.
func (e *env) notPoller(c string) bool { return c != e.slots[2].id() }

// restartNow (8): kill and restart empty while the lock is held (in
// redlock mode a majority at the same time).
func restartNow(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, e.notPoller); !ok {
		return
	}
	var wg sync.WaitGroup
	for _, i := range e.majority() {
		wg.Go(func() {
			start := time.Now()
			if err := e.nodes[i].Restart(); err != nil {
				e.logf("restart: %v", err)
			}
			e.fault(8, fmt.Sprintf("node%d", i), "killed, restarted empty at once", start, time.Now())
		})
	}
	wg.Wait()
}

// restartDelayed (9): kill, and restart empty 1.5 ttl later.
func restartDelayed(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	var wg sync.WaitGroup
	for k, i := range e.majority() {
		if k > 0 {
			time.Sleep(e.spec.TTL / 5)
		}
		wg.Go(func() {
			start := time.Now()
			if err := e.nodes[i].Kill(); err != nil {
				e.logf("kill: %v", err)
			}
			time.Sleep(3 * e.spec.TTL / 2)
			if err := e.nodes[i].Restart(); err != nil {
				e.logf("restart: %v", err)
			}
			e.fault(9, fmt.Sprintf("node%d", i), "killed, restarted empty 1.5 ttl later", start, time.Now())
		})
	}
	wg.Wait()
}

// clockJump (10): the lock key expires early on a majority of nodes, whose
// clocks (fencing seeds) jump 5 s ahead.
func clockJump(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, e.notPoller); !ok {
		return
	}
	var hit []string
	start := time.Now()
	for _, i := range e.majority() {
		n, err := e.jump(i, 5*time.Second, true)
		if err != nil {
			e.logf("jump: %v", err)
			continue
		}
		hit = append(hit, fmt.Sprintf("node%d:%d", i, n))
	}
	now := time.Now()
	e.fault(10, strings.Join(hit, ","), "PEXPIRE 1 on the lock key, fencing seed +5 s", start, now)
}

// connReset (11): reset connections on one link of one client.
func connReset(ctx context.Context, e *env) {
	ttl := e.spec.TTL
	if !sleep(ctx, e.between(0, ttl/2)) {
		return
	}
	s := e.slots[e.rng.IntN(len(e.slots))]
	links := append(append([]*Link(nil), s.links...), s.res)
	l := links[e.rng.IntN(len(links))]
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
	node := fmt.Sprintf("node%d", l.Node)
	if l.Node < 0 {
		node = "resource"
	}
	e.fault(11, s.id(), fmt.Sprintf("reset_peer %s on %s link", dir, node), start, time.Now())
}

// killHolder (12): SIGKILL the process client right after its lease check,
// and start a new one in its place.
func killHolder(ctx context.Context, e *env) {
	s := e.slots[0]
	id := s.id()
	if _, ok := e.waitChecked(ctx, func(c string) bool { return c == id }); !ok {
		return
	}
	now := time.Now()
	s.current().kill()
	e.rec.Add(history.Event{Kind: history.KindClientExit, Client: id, At: history.Mono(now), Detail: "SIGKILL"})
	e.fault(12, id, "SIGKILL", now, now)
	time.Sleep(e.spec.TTL / 2)
	if err := e.startSlot(s, true); err != nil {
		e.logf("restart client: %v", err)
	}
}

// sharedFaults (26, 27): one of the existing fault classes at random, on a
// shared lock's holders: a paused (1) or killed (12) process holder, the
// node paused (7), a holder black-holed (5), a connection reset (11).
func sharedFaults(ctx context.Context, e *env) {
	inj := []func(context.Context, *env){pauseHolder, killHolder, nodePaused, partitionHolder, connReset}
	inj[e.rng.IntN(len(inj))](ctx, e)
}
