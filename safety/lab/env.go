package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine/postgres/pgtest"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// env is one run's world: lock nodes, the resource server, the proxies,
// the clients and the recorder.
type env struct {
	spec     RunSpec
	rng      *rand.Rand
	rec      *history.Recorder
	name     string
	nodes    []*redistest.Server
	resource *redistest.Server
	admin    []*goredis.Client // straight to each node, no proxy
	proxies  *Proxies
	slots    []*slot
	exe      []string
	logf     func(string, ...any)
	// be is the etcd cluster or PostgreSQL server (Mode.Backend).
	be *backendWorld
	// sentinel is the Sentinel deployment (Mode.Sentinel); failedOver
	// is set once its one failover of the run has started.
	sentinel   *redistest.Sentinel
	failedOver bool
	// probe measures the servers' responsiveness while the run goes on
	// (serverprobe.go).
	probe *serverProbe

	// The queue scenarios: each client's waiting call in progress, kept
	// from the history as it is recorded (see trackWaits).
	wmu     sync.Mutex
	waiting map[string]*waitCall
}

// slot is one client position; a process slot gets a new process (and id)
// when its process is killed.
type slot struct {
	base  string
	gen   int
	cfg   client.Config
	links []*Link // to each node
	res   *Link   // to the resource
	// pgProxy is the slot's pausable link to PostgreSQL (Mode.Backend).
	pgProxy *pgtest.Proxy
	mu      sync.Mutex
	proc    *proc
	worker  *client.Worker
	cancel  context.CancelFunc
	done    chan struct{}
}

// id is the client id of the slot's current client.
func (s *slot) id() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.ID
}

// clientParams derives client settings from the ttl.
func clientParams(ttl time.Duration) client.Config {
	return client.Config{
		TTL:         ttl,
		NodeTimeout: max(ttl/20, 10*time.Millisecond),
		MaxOps:      16,
		Think:       ttl / 20,
		Gap:         max(ttl/50, 10*time.Millisecond),
		OpTimeout:   ttl / 2,
		Budget:      3 * ttl,
	}
}

// setup starts the servers, proxies and clients of a run.
func setup(spec RunSpec, rec *history.Recorder, exe []string, logf func(string, ...any)) (*env, error) {
	e := &env{
		spec: spec, rec: rec, exe: exe, logf: logf,
		rng:     rand.New(rand.NewPCG(spec.Seed, uint64(spec.Scenario.ID)<<8|uint64(len(spec.Mode.Name)))),
		name:    fmt.Sprintf("lock-s%02d", spec.Scenario.ID),
		proxies: NewProxies(),
	}
	if spec.Mode.Backend != client.BackendRedis {
		be, err := startBackend(spec, e.name, logf)
		if err != nil {
			return nil, err
		}
		e.be = be
	} else if spec.Mode.Sentinel {
		if err := e.startSentinel(); err != nil {
			return nil, err
		}
		res, err := redistest.New()
		if err != nil {
			e.teardown()
			return nil, err
		}
		e.resource = res
	} else {
		servers := make([]*redistest.Server, spec.Mode.Nodes+1)
		errs := make([]error, len(servers))
		var wg sync.WaitGroup
		for i := range servers {
			wg.Go(func() { servers[i], errs[i] = redistest.New() })
		}
		wg.Wait()
		e.nodes, e.resource = servers[:spec.Mode.Nodes], servers[spec.Mode.Nodes]
		if err := errors.Join(errs...); err != nil {
			e.teardown()
			return nil, err
		}
	}
	for _, n := range e.nodes {
		opt := &goredis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true, DisableIdentity: true, PoolSize: 2}
		e.admin = append(e.admin, goredis.NewClient(opt))
	}
	type style struct {
		proc          bool
		style, policy string
	}
	styles := []style{{true, client.StyleWait, ""}, {false, client.StyleWait, ""}, {false, client.StylePoll, ""}}
	if spec.Scenario.Queue {
		if spec.Mode.Redlock {
			e.teardown()
			return nil, fmt.Errorf("scenario %d: the waiter queue is single-node only", spec.Scenario.ID)
		}
		styles = []style{
			{true, client.StyleWait, history.PolicyFair},
			{true, client.StyleWait, history.PolicyFair},
			{false, client.StyleWait, history.PolicyFair},
			{true, client.StyleWait, history.PolicyDefault},
		}
		e.trackWaits()
	}
	if spec.Scenario.Elect {
		// Three campaigners, all processes: any leader can be stopped,
		// killed or cut off.
		styles = []style{{true, client.StyleWait, ""}, {true, client.StyleWait, ""}, {true, client.StyleWait, ""}}
	}
	if spec.Scenario.Sentinel {
		// All processes: whichever holds the grant the failover loses is
		// stopped across it.
		styles = []style{{true, client.StyleWait, ""}, {true, client.StyleWait, ""}, {true, client.StylePoll, ""}}
	}
	if spec.Scenario.Shared != "" {
		// Five holders on one semaphore or RW lock: more demand than
		// permits.
		styles = append(styles, style{false, client.StyleWait, ""}, style{false, client.StylePoll, ""})
	}
	for i, st := range styles {
		s := &slot{base: fmt.Sprintf("c%d", i)}
		cfg := clientParams(spec.TTL)
		cfg.ID, cfg.Name, cfg.Redlock, cfg.Style = s.base, e.name, spec.Mode.Redlock, st.style
		cfg.Seed = spec.Seed*31 + uint64(i)
		cfg.MinHold = time.Duration(max(spec.Scenario.MinHold, 1)) * spec.TTL
		cfg.Impl = client.ImplLibrary
		if spec.Scenario.Queue {
			cfg.Policy, cfg.Queue = st.policy, spec.Control != NoQueue
			cfg.MinHold, cfg.MaxOps, cfg.Budget = spec.TTL/2, 4, 10*spec.TTL
		}
		if spec.Scenario.Elect {
			// A leadership lasts at least 2 ttl (renewed 5 times), then
			// the leader resigns; a campaign waits up to 10 ttl.
			cfg.Elect, cfg.MinHold, cfg.Budget = true, 2*spec.TTL, 10*spec.TTL
		}
		cfg.Shared, cfg.Limit, cfg.Split = spec.Scenario.Shared, spec.Scenario.Limit, spec.Control == Split
		if cfg.Shared != "" || spec.Scenario.Sentinel {
			// Shorter holds: more grants and hand-overs per run (the
			// Sentinel failover waits for a grant while the replica is
			// cut off).
			cfg.MinHold, cfg.MaxOps = spec.TTL/2, 4
		}
		switch spec.Control {
		case IgnoreLoss:
			cfg.Impl = client.ImplIgnoreLoss
		case NoValidity:
			cfg.Impl, cfg.NoQuorumValidity, cfg.NoFencing = client.ImplNoValidity, true, true
		case FromReply:
			cfg.Impl = client.ImplFromReply
		case NoFencing:
			cfg.NoFencing = true
		case NoTimeFloor:
			cfg.NoTimeFloor = true
		case FenceOff:
			cfg.NoFence = true
		case LongPause:
			// Calls wait 20 ttl, past the pause: with the usual 10 ttl
			// every call's budget ends before the node resumes, and the
			// free time splits where no call waits.
			cfg.Budget = 20 * spec.TTL
		case LateLoss:
			// Holds outlast the lease of a partitioned holder (4 ttl):
			// its loss comes while it still works.
			cfg.Impl, cfg.MinHold = client.ImplLateLoss, 4*spec.TTL
		}
		if e.sentinel != nil {
			cfg.Sentinel, cfg.Nodes = true, e.sentinel.Addrs()
		}
		if e.be != nil {
			cfg.Backend, cfg.PGFence = spec.Mode.Backend, spec.Scenario.PGFence
			if cfg.Backend == client.BackendZooKeeper {
				cfg.Session = ZKSession
			}
			eps, err := e.be.endpoints(s)
			if err != nil {
				e.teardown()
				return nil, err
			}
			cfg.Nodes = eps
			s.cfg = cfg
			e.slots = append(e.slots, s)
			if err := e.startSlot(s, st.proc); err != nil {
				e.teardown()
				return nil, err
			}
			continue
		}
		for j, n := range e.nodes {
			l, err := e.proxies.New(s.base, j, n.Addr())
			if err != nil {
				e.teardown()
				return nil, err
			}
			s.links = append(s.links, l)
			cfg.Nodes = append(cfg.Nodes, l.Addr())
		}
		l, err := e.proxies.New(s.base, -1, e.resource.Addr())
		if err != nil {
			e.teardown()
			return nil, err
		}
		s.res, cfg.Resource = l, l.Addr()
		s.cfg = cfg
		e.slots = append(e.slots, s)
		if err := e.startSlot(s, st.proc); err != nil {
			e.teardown()
			return nil, err
		}
	}
	return e, nil
}

// startSlot starts the slot's client as a process or a goroutine.
func (e *env) startSlot(s *slot, asProc bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if s.gen > 1 {
		s.cfg.ID = fmt.Sprintf("%s.%d", s.base, s.gen)
		s.cfg.Seed += 1000
	}
	if asProc {
		p, err := startProc(e.exe, s.cfg, e.rec)
		if err != nil {
			return err
		}
		s.proc = p
		return nil
	}
	w, err := client.NewWorker(s.cfg, e.rec.Add)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.worker, s.cancel, s.done = w, cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		w.Run(ctx)
	}()
	return nil
}

// current returns the slot's process (nil for a goroutine slot).
func (s *slot) current() *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// stopClients stops every client, letting each finish its hold.
func (e *env) stopClients() {
	grace := 3*e.spec.TTL + 3*time.Second
	var wg sync.WaitGroup
	for _, s := range e.slots {
		s.mu.Lock()
		p, w, cancel, done := s.proc, s.worker, s.cancel, s.done
		s.mu.Unlock()
		if p != nil {
			wg.Go(func() { p.stop(grace) })
		}
		if w != nil {
			wg.Go(func() {
				cancel()
				select {
				case <-done:
				case <-time.After(grace):
					e.logf("client %s did not stop within %v", s.id(), grace)
				}
				_ = w.Close()
			})
		}
	}
	wg.Wait()
}

// healNodes makes sure every node runs and is not paused.
func (e *env) healNodes() {
	if e.be != nil {
		e.be.heal(e)
		return
	}
	if e.sentinel != nil {
		_ = e.sentinel.Replica.Resume() // the master stays down: the replica took over
	}
	for _, n := range e.nodes {
		if !n.Running() {
			if err := n.Restart(); err != nil {
				e.logf("restart %s: %v", n.Addr(), err)
			}
			continue
		}
		_ = n.Resume()
	}
}

// finalState reads both resource copies straight from the server.
func (e *env) finalState() error {
	if e.be != nil {
		return e.backendFinal()
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: e.resource.Addr(), DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, c, err := client.ReadFinal(ctx, rdb, e.name)
	if err != nil {
		return err
	}
	now := history.Now()
	e.rec.Add(history.Event{Kind: history.KindFinal, Name: e.name, Res: history.Fenced, At: now, Counter: f.Counter, Set: f.Elements()})
	e.rec.Add(history.Event{Kind: history.KindFinal, Name: e.name, Res: history.Control, At: now, Counter: c.Counter, Set: c.Elements()})
	return nil
}

// teardown kills whatever is left and removes the servers.
func (e *env) teardown() {
	for _, s := range e.slots {
		if p := s.current(); p != nil && !p.exited() {
			p.kill()
		}
	}
	e.proxies.Close()
	for _, s := range e.slots {
		if s.pgProxy != nil {
			s.pgProxy.Close()
		}
	}
	if e.be != nil {
		e.be.close()
	}
	if e.sentinel != nil {
		_ = e.sentinel.Close()
	}
	for _, a := range e.admin {
		_ = a.Close()
	}
	for _, n := range append(append([]*redistest.Server(nil), e.nodes...), e.resource) {
		if n != nil {
			_ = n.Close()
		}
	}
}

// fault records a fault window; servers are the servers it stopped,
// killed, restarted or cut off when target does not name them
// (history.Event.Servers).
func (e *env) fault(class int, target, detail string, start, end time.Time, servers ...string) {
	e.rec.Add(history.Event{Kind: history.KindFault, Class: class, Target: target, Detail: detail,
		Start: history.Mono(start), End: history.Mono(end), Servers: servers})
}

// waitChecked waits until a client matching match checks its lease before a
// write (the moment a pause or delay hurts), or ctx ends.
func (e *env) waitChecked(ctx context.Context, match func(client string) bool) (history.Event, bool) {
	ch := e.rec.Watch(func(ev history.Event) bool { return ev.Kind == history.KindChecked && match(ev.Client) })
	select {
	case ev := <-ch:
		return ev, true
	case <-ctx.Done():
		return history.Event{}, false
	}
}

// anyClient matches every client.
func anyClient(string) bool { return true }

// slotOf returns the slot whose current client is id.
func (e *env) slotOf(id string) *slot {
	for _, s := range e.slots {
		if s.id() == id {
			return s
		}
	}
	return nil
}

// between returns a random duration in [lo, hi).
func (e *env) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(e.rng.Int64N(int64(hi-lo)))
}

// pick returns k distinct random indexes below n.
func (e *env) pick(n, k int) []int {
	return e.rng.Perm(n)[:k]
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
