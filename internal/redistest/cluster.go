package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// clusterReadyTimeout bounds how long StartCluster waits for every node to
// agree that the cluster is up.
const clusterReadyTimeout = 15 * time.Second

// Cluster is a Redis Cluster of real redis-server processes on loopback,
// masters only, every hash slot assigned, started by StartCluster.
type Cluster struct {
	// Nodes are the masters, in slot order: node i serves the i-th range.
	Nodes []*Server

	mu      sync.Mutex
	closed  bool
	clients []*redis.ClusterClient
}

// StartCluster starts a Redis Cluster of masters nodes (at least 1), each a
// Server as by Start (with opts) with cluster mode on and its cluster bus on
// a free port of its own, splits the slots evenly among them, joins them and
// waits until every node reports the cluster up. A node keeps its cluster
// identity and slots across Restart (nodes.conf in its directory).
// Everything is cleaned up by t.Cleanup.
func StartCluster(t testing.TB, masters int, opts ...Option) *Cluster {
	t.Helper()
	if masters < 1 {
		t.Fatalf("redistest: a cluster needs at least one master, got %d", masters)
	}
	if _, err := RequireRedisServer(); err != nil {
		t.Fatalf("%v", err)
	}
	c := &Cluster{Nodes: make([]*Server, masters)}
	buses := make([]int, masters)
	errs := make([]error, masters)
	var wg sync.WaitGroup
	for i := range masters {
		wg.Go(func() { c.Nodes[i], buses[i], errs[i] = newClusterNode(opts) })
	}
	wg.Wait()
	for _, s := range c.Nodes {
		if s != nil {
			t.Cleanup(func() { closeIn(t, s) })
		}
	}
	t.Cleanup(c.closeClients) // runs before the nodes are closed
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redistest: cluster nodes failed to start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterFormTimeout)
	defer cancel()
	if err := c.form(ctx, buses); err != nil {
		t.Fatalf("redistest: form a cluster of %d: %v", masters, err)
	}
	return c
}

// newClusterNode starts one server in cluster mode and returns it with its
// cluster bus port. A bus port taken meanwhile costs a fresh try.
func newClusterNode(opts []Option) (*Server, int, error) {
	var errs []error
	for range startAttempts {
		bus, err := freePort()
		if err != nil {
			return nil, 0, err
		}
		s, err := New(append(opts[:len(opts):len(opts)], WithArgs("--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus)))...)
		if err == nil {
			return s, bus, nil
		}
		errs = append(errs, err)
	}
	return nil, 0, errors.Join(errs...)
}

// form assigns the slots, makes every node meet the first one and waits
// until the cluster is up. A meeting whose handshake did not complete (on
// a starved machine it can time out, and the node then forgets it) is
// asked again every meetAgain until the cluster is up or ctx ends: CLUSTER
// MEET of a node already known changes nothing.
func (c *Cluster) form(ctx context.Context, buses []int) error {
	n := len(c.Nodes)
	for i, s := range c.Nodes {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := s.admin(ctx, func(a *redis.Client) error { return a.ClusterAddSlotsRange(ctx, lo, hi).Err() }); err != nil {
			return fmt.Errorf("assign slots %d-%d to %s: %w", lo, hi, s.Addr(), err)
		}
	}
	first := c.Nodes[0]
	for {
		for _, s := range c.Nodes[1:] {
			err := s.admin(ctx, func(a *redis.Client) error {
				return a.Do(ctx, "cluster", "meet", "127.0.0.1", first.Port(), buses[0]).Err()
			})
			if err != nil {
				return fmt.Errorf("%s meets %s: %w", s.Addr(), first.Addr(), err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, meetAgain)
		err := c.waitUp(wctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}

// clusterFormTimeout bounds StartCluster's wait for a new cluster, and
// meetAgain is how often it asks the nodes to meet again meanwhile: a
// bound for a harness on a starved machine, not a speed.
const (
	clusterFormTimeout = time.Minute
	meetAgain          = 5 * time.Second
)

// WaitUp waits until every node reports the cluster up again, for example
// after a node's Restart, and fails the test after 15 seconds.
func (c *Cluster) WaitUp(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := c.waitUp(ctx); err != nil {
		t.Fatalf("redistest: cluster not up: %v", err)
	}
}

// waitUp waits until each node sees all of them and every slot served.
func (c *Cluster) waitUp(ctx context.Context) error {
	n := len(c.Nodes)
	want := []string{"cluster_state:ok", "cluster_slots_ok:" + strconv.Itoa(clusterSlots), "cluster_known_nodes:" + strconv.Itoa(n)}
	for _, s := range c.Nodes {
		for {
			var info string
			err := s.admin(ctx, func(a *redis.Client) error {
				var err error
				info, err = a.ClusterInfo(ctx).Result()
				return err
			})
			if err == nil && containsAll(info, want) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s not ready: %v\n%s", s.Addr(), err, info)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// containsAll reports whether every line of want is a line of info.
func containsAll(info string, want []string) bool {
	lines := strings.Split(strings.ReplaceAll(info, "\r", ""), "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Client returns a new go-redis cluster client for c (every master as a
// seed), with context deadlines honoured. It is closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cc := c.newClient()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = cc.Close()
		return cc
	}
	c.clients = append(c.clients, cc)
	return cc
}

// newClient returns a cluster client that the caller closes.
func (c *Cluster) newClient() *redis.ClusterClient {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    addrs,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// Del deletes keys behind the library's back, each on the node that serves
// it.
func (c *Cluster) Del(ctx context.Context, keys ...string) error {
	cc := c.newClient()
	defer cc.Close()
	for _, k := range keys {
		if err := cc.Del(ctx, k).Err(); err != nil {
			return fmt.Errorf("redistest: del %s: %w", k, err)
		}
	}
	return nil
}

// closeClients closes every client handed out by Client.
func (c *Cluster) closeClients() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cc := range c.clients {
		_ = cc.Close()
	}
	c.clients = nil
}
