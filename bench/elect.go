package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
)

// The workloads of S8 (leader election): failover after the leader
// process is SIGKILLed, graceful Resign, and a change seen by every one of
// 16 observers. Every campaigner and observer is its own Client on its
// own go-redis client, as separate processes would have them.

// leaderEnv carries the failover leader's settings to the child process
// (this binary, or the test binary, started again): "addr|name|ttl".
const leaderEnv = "DISTLOCK_BENCH_LEADER"

// leaderChild is the failover leader: it campaigns, prints "elected TERM"
// once elected, and leads (renewing) until it is killed or its stdin
// closes. It returns the exit code.
func leaderChild() int {
	f := strings.Split(os.Getenv(leaderEnv), "|")
	if len(f) != 3 {
		fmt.Fprintln(os.Stderr, "leader: bad", leaderEnv)
		return 2
	}
	ttl, err := time.ParseDuration(f[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "leader:", err)
		return 2
	}
	ec, err := newElectClient(f[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "leader:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	l, err := ec.c.Campaign(ctx, f[1], "leader-process", distlock.WithTTL(ttl))
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leader:", err)
		return 1
	}
	fmt.Printf("elected %d\n", l.Term())
	_, _ = io.Copy(io.Discard, os.Stdin) // lead until killed (or the harness is gone)
	_ = l.Resign(context.Background())
	ec.close()
	return 0
}

// electClient is one distlock Client on engine/redis, with its own go-redis
// client.
type electClient struct {
	c   *distlock.Client
	eng engine.Engine
	rdb *goredis.Client
}

func newElectClient(addr string) (*electClient, error) {
	rdb := goredis.NewClient(&goredis.Options{
		Addr: addr, ContextTimeoutEnabled: true, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	eng, err := redisengine.New(rdb)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return &electClient{c: distlock.New(eng), eng: eng, rdb: rdb}, nil
}

func (x *electClient) close() {
	_ = x.c.Close()
	_ = x.eng.Close()
	_ = x.rdb.Close()
}

func newElectClients(addr string, n int) ([]*electClient, error) {
	var out []*electClient
	for range n {
		c, err := newElectClient(addr)
		if err != nil {
			closeElectClients(out)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func closeElectClients(cs []*electClient) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(c.close)
	}
	wg.Wait()
}

// electResult is what one S8 cell measured.
type electResult struct {
	lat []time.Duration // the measured latencies, one per change
	// each: per observer and change, the time to that observer (the
	// observer rows); afterExpiry: new leader elected minus the dead
	// leader's key expiry (failover).
	each, afterExpiry []time.Duration
	errs              int
	firstErr          error
}

func (r *electResult) fail(err error) {
	r.errs++
	if r.firstErr == nil {
		r.firstErr = err
	}
}

// leaderProc is the failover leader's process.
type leaderProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// startLeader starts the leader process and waits until it is elected.
func startLeader(addr, name string, ttl time.Duration) (*leaderProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%v", leaderEnv, addr, name, ttl))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &leaderProc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	elected := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := sc.Scan() && strings.HasPrefix(sc.Text(), "elected ")
		elected <- ok
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case ok := <-elected:
		if ok {
			return p, nil
		}
	case <-time.After(30 * time.Second):
	}
	p.kill()
	return nil, errors.New("the leader process was not elected")
}

func (p *leaderProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.stdin.Close()
}

// measureFailover: n times, a leader process is elected, two campaigners
// (each its own Client) wait, and the leader is SIGKILLed at a random point
// of its renewal cycle (ttl/3); the time from the kill to the first
// campaigner's Campaign returning is one sample. The winner then resigns
// (the other campaign is cancelled first), and the next round starts on a
// free election.
func measureFailover(ctx context.Context, admin *goredis.Client, addr, name string, ttl time.Duration, n int) electResult {
	var res electResult
	fs, err := newElectClients(addr, 2)
	if err != nil {
		res.fail(err)
		return res
	}
	defer closeElectClients(fs)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
	type won struct {
		l  *distlock.Leadership
		at time.Time
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		p, err := startLeader(addr, name, ttl)
		if err != nil {
			res.fail(err)
			return res
		}
		fctx, cancel := context.WithCancel(ctx)
		wins := make(chan won, len(fs))
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Go(func() {
				l, err := f.c.Campaign(fctx, name, "follower", distlock.WithTTL(ttl))
				if err == nil {
					wins <- won{l, time.Now()}
				}
			})
		}
		// The campaigners are queued and asleep; the kill lands anywhere
		// in the leader's renewal cycle.
		time.Sleep(100*time.Millisecond + time.Duration(rng.Int64N(int64(ttl/3))))
		t0 := time.Now()
		_ = p.cmd.Process.Kill()
		tp := time.Now()
		left, _ := admin.PTTL(ctx, "distlock:{"+name+"}").Result()
		var winner *distlock.Leadership
		select {
		case w := <-wins:
			winner = w.l
			res.lat = append(res.lat, w.at.Sub(t0))
			if left > 0 {
				res.afterExpiry = append(res.afterExpiry, w.at.Sub(tp.Add(left)))
			}
		case <-time.After(3*ttl + 5*time.Second):
			res.fail(fmt.Errorf("round %d: no new leader %v after the kill", i, 3*ttl+5*time.Second))
		}
		p.kill() // reaped
		cancel()
		wg.Wait()
		close(wins)
		if winner != nil {
			_ = winner.Resign(context.Background())
		}
		for w := range wins {
			_ = w.l.Resign(context.Background())
		}
	}
	return res
}

// campaigners keep campaigning for one election: each, once elected,
// reports its leadership on elected and campaigns again once it ended.
type campaigners struct {
	elected chan electedAt
	wg      sync.WaitGroup
	cancel  context.CancelFunc
}

type electedAt struct {
	l  *distlock.Leadership
	at time.Time
}

func startCampaigners(ctx context.Context, cs []*electClient, name string) *campaigners {
	ctx, cancel := context.WithCancel(ctx)
	k := &campaigners{elected: make(chan electedAt, len(cs)), cancel: cancel}
	for i, c := range cs {
		k.wg.Go(func() {
			for ctx.Err() == nil {
				l, err := c.c.Campaign(ctx, name, fmt.Sprintf("campaigner-%d", i))
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				k.elected <- electedAt{l, time.Now()}
				select {
				case <-l.Done():
					// Campaign again a little later: the next leader is
					// one of the campaigners that were waiting.
					time.Sleep(5 * time.Millisecond)
				case <-ctx.Done():
					_ = l.Resign(context.Background())
				}
			}
		})
	}
	return k
}

func (k *campaigners) stop() {
	k.cancel()
	// Leaders elected meanwhile resign when their campaigner sees the
	// context end; drain their reports so that no campaigner blocks.
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	for {
		select {
		case e := <-k.elected:
			_ = e.l.Resign(context.Background())
		case <-done:
			return
		}
	}
}

// next waits for the next leader.
func (k *campaigners) next(limit time.Duration) (electedAt, error) {
	select {
	case e := <-k.elected:
		return e, nil
	case <-time.After(limit):
		return electedAt{}, fmt.Errorf("no leader elected within %v", limit)
	}
}

// measureResign: three campaigners (each its own Client); n times, after
// settle, the leader resigns; the time from the start of Resign to the next
// leader's Campaign returning is one sample.
func measureResign(ctx context.Context, addr, name string, n int, settle, limit time.Duration) electResult {
	var res electResult
	cs, err := newElectClients(addr, 3)
	if err != nil {
		res.fail(err)
		return res
	}
	defer closeElectClients(cs)
	k := startCampaigners(ctx, cs, name)
	defer k.stop()
	cur, err := k.next(limit)
	if err != nil {
		res.fail(err)
		return res
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(settle) // the others are queued and asleep
		t0 := time.Now()
		if err := cur.l.Resign(ctx); err != nil {
			res.fail(err)
		}
		next, err := k.next(limit)
		if err != nil {
			res.fail(err)
			return res
		}
		res.lat = append(res.lat, next.at.Sub(t0))
		cur = next
	}
	return res
}

// observers are Observe calls, each on its own Client, timed against one
// expected change at a time.
type observers struct {
	mu   sync.Mutex
	t0   time.Time
	want func(distlock.Leader) bool
	seen []bool
	lat  []time.Duration
	last []distlock.Leader // each observer's latest state
	left int
	done chan struct{}
	wg   sync.WaitGroup
}

func startObservers(ctx context.Context, cs []*electClient, name string) (*observers, error) {
	o := &observers{seen: make([]bool, len(cs)), lat: make([]time.Duration, len(cs)), last: make([]distlock.Leader, len(cs))}
	for i, c := range cs {
		ch, err := c.c.Observe(ctx, name)
		if err != nil {
			return nil, err
		}
		o.wg.Go(func() {
			for st := range ch {
				now := time.Now()
				o.mu.Lock()
				o.last[i] = st
				if o.want != nil && !o.seen[i] && o.want(st) {
					o.seen[i], o.lat[i] = true, now.Sub(o.t0)
					if o.left--; o.left == 0 {
						close(o.done)
					}
				}
				o.mu.Unlock()
			}
		})
	}
	return o, nil
}

// expect arms the observers for one change starting at t0 and returns a
// channel closed when every observer has seen a state matching want (an
// observer whose latest state matches already counts at once: the first
// leader, seen before the observers were armed).
func (o *observers) expect(t0 time.Time, want func(distlock.Leader) bool) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.t0, o.want, o.left, o.done = t0, want, len(o.seen), make(chan struct{})
	for i := range o.seen {
		o.seen[i], o.lat[i] = false, 0
		if want(o.last[i]) {
			o.seen[i] = true
			o.left--
		}
	}
	if o.left == 0 {
		close(o.done)
	}
	return o.done
}

// result returns the per-observer latencies of the last change, and the
// slowest.
func (o *observers) result() (each []time.Duration, last time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.want = nil
	each = append(each, o.lat...)
	for _, d := range each {
		last = max(last, d)
	}
	return each, last
}

// measureObserved: three campaigners and nObs observers (each its own
// Client); n times, after settle, a change is made and timed from its start
// to the moment the last observer received the new state: with proclaim,
// the leader proclaims a new value (Proclaim); otherwise the leader resigns
// and the next campaigner is elected (a new term).
func measureObserved(ctx context.Context, addr, name string, nObs, n int, proclaim bool, settle, limit time.Duration) electResult {
	var res electResult
	cs, err := newElectClients(addr, 3+nObs)
	if err != nil {
		res.fail(err)
		return res
	}
	defer closeElectClients(cs)
	octx, stopObs := context.WithCancel(ctx)
	obs, err := startObservers(octx, cs[3:], name)
	if err != nil {
		stopObs()
		res.fail(err)
		return res
	}
	defer func() { stopObs(); obs.wg.Wait() }()
	k := startCampaigners(ctx, cs[:3], name)
	defer k.stop()
	cur, err := k.next(limit)
	if err != nil {
		res.fail(err)
		return res
	}
	term := cur.l.Term()
	wait := func(done <-chan struct{}) bool {
		select {
		case <-done:
			return true
		case <-time.After(limit):
			res.fail(fmt.Errorf("not every observer saw the change within %v", limit))
			return false
		}
	}
	// Every observer follows the first leader before anything is timed.
	if !wait(obs.expect(time.Now(), func(st distlock.Leader) bool { return st.Term == term })) {
		return res
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(settle)
		t0 := time.Now()
		var done <-chan struct{}
		if proclaim {
			value := fmt.Sprintf("value-%d", i)
			done = obs.expect(t0, func(st distlock.Leader) bool { return st.Term == term && st.Value == value })
			if err := cur.l.Proclaim(ctx, value); err != nil {
				res.fail(err)
				return res
			}
		} else {
			old := term
			done = obs.expect(t0, func(st distlock.Leader) bool { return st.Term > old })
			if err := cur.l.Resign(ctx); err != nil {
				res.fail(err)
			}
			next, err := k.next(limit)
			if err != nil {
				res.fail(err)
				return res
			}
			cur, term = next, next.l.Term()
		}
		if !wait(done) {
			return res
		}
		each, last := obs.result()
		res.lat = append(res.lat, last)
		res.each = append(res.each, each...)
	}
	return res
}
