package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name under which the sentinels of StartSentinel
// monitor their master.
const SentinelMaster = "mymaster"

const (
	sentinelConf    = "sentinel.conf" // a sentinel's config file, in its dir (it rewrites it)
	sentinelCount   = 3               // sentinels per group; 2 agree that the master is down
	sentinelTimeout = 30 * time.Second
	// SentinelDownAfter is how long the master of StartSentinel must not
	// answer before its sentinels fail it over on their own (Failover
	// does not wait for it).
	SentinelDownAfter = 10 * time.Second
)

// Sentinel is a Sentinel-managed deployment of real processes on loopback,
// started by StartSentinel: a master, one replica of it and three
// redis-sentinel processes (redis-server --sentinel) that monitor it as
// SentinelMaster, with a quorum of 2.
type Sentinel struct {
	// Master and Replica are the servers as started: after a failover the
	// replica is the master (see MasterAddr).
	Master, Replica *Server
	// Sentinels are the three sentinels, Servers started in sentinel mode.
	Sentinels []*Server

	mu      sync.Mutex
	closed  bool
	clients []*redis.Client
}

// withSentinel makes a Server a sentinel whose config file starts with
// conf.
func withSentinel(conf string) Option { return func(c *config) { c.sentinel = conf } }

// writeSentinelConf writes a sentinel's config file before its first
// start; a restart keeps the file the sentinel rewrote (its id, epochs and
// what it learnt).
func (s *Server) writeSentinelConf() error {
	if s.cfg.sentinel == "" {
		return nil
	}
	path := filepath.Join(s.dir, sentinelConf)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.WriteFile(path, []byte(s.cfg.sentinel), 0o600); err != nil {
		return fmt.Errorf("redistest: write %s: %w", path, err)
	}
	return nil
}

// StartSentinel starts a master and a replica (each as by Start, with
// opts), makes the replica replicate the master, starts three sentinels
// that monitor it (failing it over on their own after SentinelDownAfter),
// and waits until every sentinel knows the replica and the two other
// sentinels, so that a failover can be agreed on. Everything is cleaned up
// by t.Cleanup.
func StartSentinel(t testing.TB, opts ...Option) *Sentinel {
	t.Helper()
	if _, err := RequireRedisServer(); err != nil {
		t.Fatalf("%v", err)
	}
	g, err := NewSentinel(opts...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return g
}

// NewSentinel is StartSentinel outside a test: the caller must Close the
// group.
func NewSentinel(opts ...Option) (*Sentinel, error) {
	g := &Sentinel{}
	var err error
	if g.Master, err = New(opts...); err != nil {
		return nil, err
	}
	if g.Replica, err = New(opts...); err != nil {
		return nil, errors.Join(err, g.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	if err := g.replicate(ctx); err != nil {
		err = fmt.Errorf("redistest: replicate %s to %s: %w", g.Master.Addr(), g.Replica.Addr(), err)
		return nil, errors.Join(err, g.Close())
	}
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
		"sentinel down-after-milliseconds %[1]s %[3]d\n"+
		"sentinel failover-timeout %[1]s %[4]d\n",
		SentinelMaster, g.Master.Port(), SentinelDownAfter.Milliseconds(), sentinelTimeout.Milliseconds())
	for range sentinelCount {
		s, err := New(withSentinel(conf))
		if err != nil {
			return nil, errors.Join(err, g.Close())
		}
		g.Sentinels = append(g.Sentinels, s)
	}
	if err := g.waitKnown(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("redistest: sentinels not ready: %w", err), g.Close())
	}
	return g, nil
}

// Close closes the clients handed out by Client, then every process of
// the group (as Server.Close). It is idempotent.
func (g *Sentinel) Close() error {
	g.closeClients()
	var errs []error
	for _, s := range append(append([]*Server(nil), g.Sentinels...), g.Master, g.Replica) {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// replicate makes the replica a replica of the master and waits until its
// link is up.
func (g *Sentinel) replicate(ctx context.Context) error {
	err := g.Master.admin(ctx, func(c *redis.Client) error {
		return c.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err()
	})
	if err != nil {
		return err
	}
	err = g.Replica.admin(ctx, func(c *redis.Client) error {
		return c.Do(ctx, "replicaof", "127.0.0.1", g.Master.Port()).Err()
	})
	if err != nil {
		return err
	}
	return poll(ctx, func() (bool, error) { return g.Replica.replication(ctx, "master_link_status:up") })
}

// replication reports whether INFO replication has the line want.
func (s *Server) replication(ctx context.Context, want string) (bool, error) {
	var info string
	err := s.admin(ctx, func(c *redis.Client) error {
		var err error
		info, err = c.Info(ctx, "replication").Result()
		return err
	})
	return containsAll(info, []string{want}), err
}

// waitKnown waits until every sentinel sees the replica up and knows the
// other sentinels.
func (g *Sentinel) waitKnown(ctx context.Context) error {
	for _, s := range g.Sentinels {
		err := poll(ctx, func() (bool, error) {
			var ok bool
			err := g.sentinel(ctx, s, func(c *redis.SentinelClient) error {
				replicas, err := c.Replicas(ctx, SentinelMaster).Result()
				if err != nil {
					return err
				}
				others, err := c.Sentinels(ctx, SentinelMaster).Result()
				if err != nil {
					return err
				}
				ok = len(others) == sentinelCount-1 && len(replicas) == 1 &&
					replicas[0]["name"] == g.Replica.Addr() && replicas[0]["flags"] == "slave"
				return nil
			})
			return ok, err
		})
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", s.Addr(), err)
		}
	}
	return nil
}

// Failover asks the first sentinel to fail the master over now (SENTINEL
// FAILOVER: no agreement needed, the master may be down) and waits until
// every sentinel reports the replica as the master and the replica says
// it is one. The replica must be running and not paused.
func (g *Sentinel) Failover(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	if err := g.FailoverContext(ctx); err != nil {
		t.Fatalf("%v", err)
	}
}

// FailoverContext is Failover outside a test, bounded by ctx.
func (g *Sentinel) FailoverContext(ctx context.Context) error {
	err := poll(ctx, func() (bool, error) {
		// The sentinel refuses while it has not seen the replica
		// answer since it was paused: ask again.
		err := g.sentinel(ctx, g.Sentinels[0], func(c *redis.SentinelClient) error {
			return c.Failover(ctx, SentinelMaster).Err()
		})
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("redistest: SENTINEL FAILOVER %s: %w", SentinelMaster, err)
	}
	if err := g.waitMaster(ctx, g.Replica); err != nil {
		return fmt.Errorf("redistest: failover to %s: %w", g.Replica.Addr(), err)
	}
	return nil
}

// Addrs returns the sentinels' addresses.
func (g *Sentinel) Addrs() []string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// waitMaster waits until every sentinel reports want as the master and
// want reports role:master.
func (g *Sentinel) waitMaster(ctx context.Context, want *Server) error {
	for _, s := range g.Sentinels {
		err := poll(ctx, func() (bool, error) {
			addr, err := g.masterAddr(ctx, s)
			return addr == want.Addr(), err
		})
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", s.Addr(), err)
		}
	}
	return poll(ctx, func() (bool, error) { return want.replication(ctx, "role:master") })
}

// MasterAddr returns the master's address as the first sentinel reports
// it.
func (g *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	return g.masterAddr(ctx, g.Sentinels[0])
}

// masterAddr asks sentinel s for the master's address.
func (g *Sentinel) masterAddr(ctx context.Context, s *Server) (string, error) {
	var addr []string
	err := g.sentinel(ctx, s, func(c *redis.SentinelClient) error {
		var err error
		addr, err = c.GetMasterAddrByName(ctx, SentinelMaster).Result()
		return err
	})
	if err != nil {
		return "", err
	}
	if len(addr) != 2 {
		return "", fmt.Errorf("unexpected master address %q", addr)
	}
	return addr[0] + ":" + addr[1], nil
}

// sentinel runs fn with a short-lived client of sentinel s.
func (g *Sentinel) sentinel(ctx context.Context, s *Server, fn func(*redis.SentinelClient) error) error {
	opt := s.clientOptions()
	opt.PoolSize = 1
	c := redis.NewSentinelClient(opt)
	defer c.Close()
	return fn(c)
}

// Client returns a new go-redis failover client (redis.NewFailoverClient)
// that asks the sentinels for the master, with context deadlines honoured.
// It is closed when the test ends.
func (g *Sentinel) Client() *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            SentinelMaster,
		SentinelAddrs:         g.Addrs(),
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		_ = c.Close()
		return c
	}
	g.clients = append(g.clients, c)
	return c
}

// CutReplica pauses the replica (SIGSTOP) and drops its link on the master
// (CLIENT KILL TYPE replica): from then on the master's writes reach only
// its own memory and backlog, never the replica, which cannot reconnect
// while it is paused. Writes the master made before are in the replica's
// socket already (loopback) and are applied when it resumes.
func (g *Sentinel) CutReplica(ctx context.Context) error {
	if err := g.Replica.Pause(); err != nil {
		return err
	}
	return g.Master.admin(ctx, func(c *redis.Client) error {
		n, err := c.Do(ctx, "client", "kill", "type", "replica").Int()
		if err == nil && n != 1 {
			err = fmt.Errorf("CLIENT KILL TYPE replica killed %d links, want 1", n)
		}
		return err
	})
}

// closeClients closes every client handed out by Client.
func (g *Sentinel) closeClients() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, c := range g.clients {
		_ = c.Close()
	}
	g.clients = nil
}

// poll calls cond until it reports true, every 20ms, and returns the
// last error (or the context's) when ctx ends first.
func poll(ctx context.Context, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
