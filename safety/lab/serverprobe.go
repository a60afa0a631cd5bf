package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/safety/history"
)

// The server probe measures the backend servers' own responsiveness while
// a run goes on, as the process clients measure their scheduling delay: on
// a starved machine the servers answer late too (Redlock's per-node
// timeout is ttl/20), and a time bound missed then is the machine's. From
// the lab's process, each server is asked something trivial every
// ProbeStep (Redis PING, to every Redis-family server: the lock nodes, the
// resource, a Sentinel deployment's master, replica and sentinels; an etcd
// member a serializable read; PostgreSQL SELECT 1; a ZooKeeper member
// ruok), and the slowest answer of each ProbeWindow is recorded
// (history.KindServerLag). check.Run leaves out the answers that met a
// fault on their server (check.Result.ServerLag).

const (
	// ProbeStep is the pause between two requests to one server.
	ProbeStep = 20 * time.Millisecond
	// ProbeTimeout bounds a request; one unanswered by then counts with
	// that time when the server had answered the one before (a stopped
	// server's first, which its fault leaves out), and not at all
	// otherwise.
	ProbeTimeout = time.Second
	// ProbeWindow is how often each server's slowest answer is recorded.
	ProbeWindow = 500 * time.Millisecond
)

// probeTarget is one server the probe asks.
type probeTarget struct {
	name  string
	ask   func(context.Context) error
	close func()
}

// serverProbe runs one goroutine per target from start until stop.
type serverProbe struct {
	rec     *history.Recorder
	targets []probeTarget
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu   sync.Mutex
	held map[string]int // holds in force, by server
	gen  map[string]int // holds taken so far, by server
}

// startServerProbe starts probing targets, recording to rec.
func startServerProbe(rec *history.Recorder, targets []probeTarget) *serverProbe {
	p := &serverProbe{rec: rec, targets: targets, done: make(chan struct{}), held: map[string]int{}, gen: map[string]int{}}
	for _, t := range targets {
		p.wg.Go(func() { p.run(t) })
	}
	return p
}

// stop ends the probe, records each server's last window and closes the
// connections. It is idempotent and nil-safe.
func (p *serverProbe) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.done)
		p.wg.Wait()
		for _, t := range p.targets {
			t.close()
		}
	})
}

// hold leaves out server's answers until the returned release is called
// (and until its next answer after that): for a server the lab stops
// without recording a fault (the heal-recorded-early control's hidden
// pause), whose silence is the lab's doing, not the machine's. Nil-safe.
func (p *serverProbe) hold(server string) (release func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	p.held[server]++
	p.gen[server]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.held[server]--
		p.mu.Unlock()
	}
}

// holdState returns how many holds were taken on server so far and whether
// one is in force.
func (p *serverProbe) holdState(server string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen[server], p.held[server] > 0
}

// probeWindow is one server's window being measured.
type probeWindow struct {
	from             time.Time
	worst            time.Duration
	invoke, complete time.Time
	sent, failed     int
}

// run asks t every ProbeStep until stop.
func (p *serverProbe) run(t probeTarget) {
	w := probeWindow{from: time.Now()}
	// answering: the server answered the last request (and no hold
	// started since); until then a request counts for nothing, since its
	// time includes the fault's or the reconnection's.
	answering := false
	timer := time.NewTimer(ProbeStep)
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			p.record(t.name, w, time.Now())
			return
		case <-timer.C:
		}
		gen, held := p.holdState(t.name)
		ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
		invoke := time.Now()
		err := t.ask(ctx)
		complete := time.Now()
		cancel()
		gen2, held2 := p.holdState(t.name)
		took := complete.Sub(invoke)
		w.sent++
		if err != nil {
			w.failed++
		}
		switch {
		case held || held2 || gen2 != gen:
			answering = false
		case err == nil && answering, err != nil && answering && took >= ProbeTimeout:
			if took > w.worst {
				w.worst, w.invoke, w.complete = took, invoke, complete
			}
			answering = err == nil
		default:
			answering = err == nil
		}
		if complete.Sub(w.from) >= ProbeWindow {
			p.record(t.name, w, complete)
			w = probeWindow{from: complete}
		}
		timer.Reset(ProbeStep)
	}
}

// record adds w's event, ending at end.
func (p *serverProbe) record(server string, w probeWindow, end time.Time) {
	if w.sent == 0 {
		return
	}
	e := history.Event{Kind: history.KindServerLag, Target: server, At: history.Mono(end),
		Detail: fmt.Sprintf("%d requests, %d failed", w.sent, w.failed)}
	if w.worst > 0 {
		e.Invoke, e.Complete, e.Lag = history.Mono(w.invoke), history.Mono(w.complete), int64(w.worst)
	}
	p.rec.Add(e)
}

// probeTargets lists the run's servers: the Redis lock nodes as "node0",
// "node1", ..., the resource, a Sentinel deployment's "master", "replica"
// and "sentinel0"-"sentinel2", etcd members by name, "postgres", ZooKeeper
// members as "zk1", ...: the names the faults give them.
func (e *env) probeTargets() []probeTarget {
	var ts []probeTarget
	redis := func(name, addr string) { ts = append(ts, redisTarget(name, addr)) }
	for i, n := range e.nodes {
		redis(fmt.Sprintf("node%d", i), n.Addr())
	}
	if e.resource != nil {
		redis("resource", e.resource.Addr())
	}
	if g := e.sentinel; g != nil {
		redis("master", g.Master.Addr())
		redis("replica", g.Replica.Addr())
		for i, s := range g.Sentinels {
			redis(fmt.Sprintf("sentinel%d", i), s.Addr())
		}
	}
	if e.be != nil {
		ts = append(ts, e.be.probeTargets(e.logf)...)
	}
	return ts
}

// redisTarget asks the Redis-family server at addr PING, on one
// connection, without retries.
func redisTarget(name, addr string) probeTarget {
	c := goredis.NewClient(&goredis.Options{
		Addr: addr, ContextTimeoutEnabled: true, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 1, MaxRetries: -1, DialTimeout: ProbeTimeout, DialerRetries: 1,
	})
	return probeTarget{name: name, ask: func(ctx context.Context) error { return c.Ping(ctx).Err() }, close: func() { _ = c.Close() }}
}

// probeTargets lists the etcd members, the PostgreSQL server or the
// ZooKeeper members.
func (w *backendWorld) probeTargets(logf func(string, ...any)) []probeTarget {
	var ts []probeTarget
	if w.etcd != nil {
		for _, m := range w.etcd.Members {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Client}, DialTimeout: ProbeTimeout, Logger: zap.NewNop()})
			if err != nil {
				logf("server probe: etcd %s: %v", m.Name, err)
				continue
			}
			ts = append(ts, probeTarget{name: m.Name, close: func() { _ = c.Close() }, ask: func(ctx context.Context) error {
				_, err := c.Get(ctx, "lab/probe", clientv3.WithSerializable())
				return err
			}})
		}
	}
	if w.pg != nil {
		pc, err := pgxpool.ParseConfig(w.pg.URL("application_name=lab-probe"))
		if err == nil {
			pc.MaxConns, pc.ConnConfig.ConnectTimeout = 1, ProbeTimeout
			var pool *pgxpool.Pool
			if pool, err = pgxpool.NewWithConfig(context.Background(), pc); err == nil {
				ts = append(ts, probeTarget{name: "postgres", close: pool.Close, ask: func(ctx context.Context) error {
					_, err := pool.Exec(ctx, "SELECT 1")
					return err
				}})
			}
		}
		if err != nil {
			logf("server probe: postgres: %v", err)
		}
	}
	if w.zk != nil {
		for _, m := range w.zk.Members {
			ts = append(ts, probeTarget{name: fmt.Sprintf("zk%d", m.ID), close: func() {}, ask: func(ctx context.Context) error {
				return zkRuok(ctx, m.Addr)
			}})
		}
	}
	return ts
}

// zkRuok asks the ZooKeeper server at addr ruok (a four-letter word, one
// connection each) and reads its answer.
func zkRuok(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("ruok")); err != nil {
		return err
	}
	b, err := io.ReadAll(c)
	if len(b) == 0 {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("zookeeper %s: no answer to ruok: %w", addr, err)
	}
	return nil
}
