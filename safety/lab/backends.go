package lab

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
	pgengine "github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// The lock services other than Redis: a three-member etcd cluster
// (engine/etcd, the resource in the same cluster behind etcdfence) and one
// PostgreSQL 15 server (engine/postgres, the resource in the same database
// behind pgfence, each client through a pausable TCP proxy of its own).
// Their runs use the scenarios whose Backend names them.

// backendWorld is one run's etcd cluster or PostgreSQL server.
type backendWorld struct {
	tb *labTB

	etcd      *etcdtest.Cluster
	etcdAdmin *clientv3.Client

	zk      *zktest.Ensemble
	zkAdmin *zk.Conn

	pg     *pgtest.Server
	pgPool *pgxpool.Pool
	pgMu   sync.Mutex
	pgDown bool
}

// labTB lets etcdtest (written for tests) run inside the lab: Fatal panics
// with tbFatal, which the lab's calls recover; cleanups run at teardown.
type labTB struct {
	mu       sync.Mutex
	cleanups []func()
	failed   bool
	logf     func(string, ...any)
}

type tbFatal struct{ msg string }

func (t *labTB) Helper()                         {}
func (t *labTB) Logf(format string, args ...any) { t.logf(format, args...) }
func (t *labTB) Fatal(args ...any)               { t.fail(fmt.Sprint(args...)) }
func (t *labTB) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
}
func (t *labTB) fail(msg string) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	panic(tbFatal{msg})
}
func (t *labTB) Failed() bool { t.mu.Lock(); defer t.mu.Unlock(); return t.failed }
func (t *labTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *labTB) TempDir() string {
	d, err := os.MkdirTemp("", "distlock-lab-backend-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// cleanup runs the cleanups, last registered first.
func (t *labTB) cleanup() {
	t.mu.Lock()
	fs := slices.Clone(t.cleanups)
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// tbDo runs f and turns a labTB Fatal into an error.
func tbDo(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			tf, ok := r.(tbFatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", tf.msg)
		}
	}()
	f()
	return nil
}

// startBackend starts the run's etcd cluster, PostgreSQL server or
// ZooKeeper ensemble (the resource of lock name in it).
func startBackend(spec RunSpec, name string, logf func(string, ...any)) (*backendWorld, error) {
	w := &backendWorld{tb: &labTB{logf: logf}}
	switch spec.Mode.Backend {
	case client.BackendZooKeeper:
		if err := w.startZK(spec, name); err != nil {
			w.close()
			return nil, err
		}
	case client.BackendEtcd:
		if err := tbDo(func() { w.etcd = etcdtest.Start(w.tb, spec.Mode.Nodes) }); err != nil {
			w.close()
			return nil, fmt.Errorf("etcd: %w", err)
		}
		cli, err := client.NewEtcdClient(w.etcd.Endpoints(), spec.TTL)
		if err != nil {
			w.close()
			return nil, err
		}
		w.etcdAdmin = cli
	case client.BackendPostgres:
		s, err := pgtest.Start()
		if err != nil {
			return nil, err
		}
		w.pg = s
		if w.pgPool, err = client.NewPGPool(s.URL("application_name=lab")); err != nil {
			w.close()
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pgengine.Migrate(ctx, w.pgPool, client.PGSchema); err != nil {
			w.close()
			return nil, fmt.Errorf("postgres migrate: %w", err)
		}
		if err := client.PGSetup(ctx, w.pgPool); err != nil {
			w.close()
			return nil, fmt.Errorf("postgres resource tables: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown backend %q", spec.Mode.Backend)
	}
	return w, nil
}

// endpoints returns a client's lock service addresses: the etcd members'
// URLs, or the database URL through the slot's own proxy (which it makes).
func (w *backendWorld) endpoints(s *slot) ([]string, error) {
	if w.zk != nil {
		return w.zk.Servers(), nil
	}
	if w.etcd != nil {
		return w.etcd.Endpoints(), nil
	}
	p, err := pgtest.NewProxy(fmt.Sprintf("127.0.0.1:%d", w.pg.Port))
	if err != nil {
		return nil, err
	}
	s.pgProxy = p
	return []string{fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&application_name=%s", p.Port(), s.base)}, nil
}

// heal resumes every etcd member and restarts killed ones; restarts a
// killed PostgreSQL.
func (w *backendWorld) heal(e *env) {
	if w.zk != nil {
		w.healZK(e)
	}
	if w.etcd != nil {
		for _, m := range w.etcd.Members {
			if m.Running() {
				m.Cont()
				continue
			}
			if err := tbDo(m.Restart); err != nil {
				e.logf("restart etcd %s: %v", m.Name, err)
			}
		}
	}
	if w.pg != nil {
		w.pgMu.Lock()
		down := w.pgDown
		w.pgMu.Unlock()
		if down {
			if err := w.pg.Start(); err != nil {
				e.logf("restart postgres: %v", err)
			}
			w.pgMu.Lock()
			w.pgDown = false
			w.pgMu.Unlock()
		}
	}
	for _, s := range e.slots {
		if s.pgProxy != nil {
			s.pgProxy.Resume()
		}
	}
}

// final reads both resource copies straight from the backend.
func (w *backendWorld) final(ctx context.Context, name string) (f, c client.State, err error) {
	if w.zk != nil {
		return w.finalZK(ctx, name)
	}
	if w.etcd != nil {
		return client.ReadFinalEtcd(ctx, w.etcdAdmin, name)
	}
	return client.ReadFinalPG(ctx, w.pgPool, name)
}

func (w *backendWorld) close() {
	w.closeZK()
	if w.etcdAdmin != nil {
		_ = w.etcdAdmin.Close()
	}
	if w.pgPool != nil {
		w.pgPool.Close()
	}
	if w.pg != nil {
		w.pg.Stop()
	}
	w.tb.cleanup()
}

// etcdLeader returns the index of the etcd leader, or -1.
func (e *env) etcdLeader() int {
	i, err := e.be.etcd.Leader(e.be.etcdAdmin)
	if err != nil {
		return -1
	}
	return i
}

// etcdLeaderKill (19): SIGKILL the etcd leader right after a holder's
// lease check (locks held, waiters waiting), restart it on its data dir
// 0.25-1 ttl later.
func etcdLeaderKill(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	i := e.etcdLeader()
	if i < 0 {
		return
	}
	m := e.be.etcd.Members[i]
	d := e.between(e.spec.TTL/4, e.spec.TTL)
	start := time.Now()
	m.Kill()
	time.Sleep(d)
	if err := tbDo(m.Restart); err != nil {
		e.logf("restart etcd %s: %v", m.Name, err)
	}
	e.fault(19, m.Name, fmt.Sprintf("leader %s SIGKILLed, restarted %v later", m.Name, d.Round(time.Millisecond)), start, time.Now())
}

// etcdMinorityStop (20): SIGSTOP one member of three (the leader half of
// the time) right after a holder's lease check, for 1-2 ttl.
func etcdMinorityStop(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	i, what := e.rng.IntN(len(e.be.etcd.Members)), "follower"
	if e.rng.IntN(2) == 0 {
		if l := e.etcdLeader(); l >= 0 {
			i, what = l, "leader"
		}
	} else if l := e.etcdLeader(); l == i {
		what = "leader"
	}
	m := e.be.etcd.Members[i]
	d := e.between(e.spec.TTL, 2*e.spec.TTL)
	start := time.Now()
	m.Stop()
	time.Sleep(d)
	m.Cont()
	e.fault(20, m.Name, fmt.Sprintf("%s %s SIGSTOPped %v", what, m.Name, d.Round(time.Millisecond)), start, time.Now())
}

// pgRestart (22): kill PostgreSQL (pg_ctl -m immediate) right after a
// holder's lease check, start it again 0.2-1 ttl later.
func pgRestart(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	w := e.be
	d := e.between(e.spec.TTL/5, e.spec.TTL)
	start := time.Now()
	w.pgMu.Lock()
	w.pgDown = true
	w.pgMu.Unlock()
	if err := w.pg.Kill(); err != nil {
		e.logf("kill postgres: %v", err)
	}
	time.Sleep(d)
	if err := w.pg.Start(); err != nil {
		e.logf("start postgres: %v", err)
	} else {
		w.pgMu.Lock()
		w.pgDown = false
		w.pgMu.Unlock()
	}
	e.fault(22, "postgres", fmt.Sprintf("killed (immediate), started %v later", d.Round(time.Millisecond)), start, time.Now())
}

// pgTerminate (23): pg_terminate_backend on every connection of a holder
// (its pool, its LISTEN connection, its resource pool) right after its
// lease check, or of a waiting client.
func pgTerminate(ctx context.Context, e *env) {
	ev, ok := e.waitChecked(ctx, anyClient)
	if !ok {
		return
	}
	target := ev.Client
	if e.rng.IntN(3) == 0 { // sometimes a client that is not the holder
		if s := e.slots[e.rng.IntN(len(e.slots))]; s.id() != ev.Client {
			target = s.id()
		}
	}
	s := e.slotOf(target)
	if s == nil {
		return
	}
	start := time.Now()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	var n int
	err := e.be.pgPool.QueryRow(c, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", s.base).Scan(&n)
	cancel()
	if err != nil {
		e.logf("pg_terminate_backend: %v", err)
	}
	e.fault(23, target, fmt.Sprintf("pg_terminate_backend on %d connections", n), start, time.Now())
}

// pgProxyPause (24): stall every byte between a holder and PostgreSQL
// (its proxy paused) right after its lease check, for 2-2.5 ttl: the
// client process runs, its renewals and writes hang.
func pgProxyPause(ctx context.Context, e *env) {
	ev, ok := e.waitChecked(ctx, anyClient)
	if !ok {
		return
	}
	s := e.slotOf(ev.Client)
	if s == nil || s.pgProxy == nil {
		return
	}
	d := e.between(2*e.spec.TTL, 5*e.spec.TTL/2)
	start := time.Now()
	s.pgProxy.Pause()
	time.Sleep(d)
	s.pgProxy.Resume()
	e.fault(24, ev.Client, fmt.Sprintf("proxy paused %v", d.Round(time.Millisecond)), start, time.Now())
}

// backendFinal records the final state of both copies.
func (e *env) backendFinal() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, c, err := e.be.final(ctx, e.name)
	if err != nil {
		return err
	}
	now := history.Now()
	e.rec.Add(history.Event{Kind: history.KindFinal, Name: e.name, Res: history.Fenced, At: now, Counter: f.Counter, Set: f.Elements()})
	e.rec.Add(history.Event{Kind: history.KindFinal, Name: e.name, Res: history.Control, At: now, Counter: c.Counter, Set: c.Elements()})
	return nil
}
