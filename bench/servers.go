package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock/internal/redistest"
)

// node is one redis-server the harness measures against: started by
// bench/run (and pinned there), or by the harness itself through
// internal/redistest when no address is given.
type node struct {
	addr  string
	pid   int
	admin *goredis.Client   // INFO, FLUSHALL
	srv   *redistest.Server // nil when started by bench/run

	mu     sync.Mutex
	paused bool
}

// newNode connects to the redis-server at addr and learns its process id.
func newNode(ctx context.Context, addr string, srv *redistest.Server) (*node, error) {
	n := &node{addr: addr, srv: srv, admin: goredis.NewClient(&goredis.Options{
		Addr:                     addr,
		PoolSize:                 2,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})}
	info, err := n.infoText(ctx, "server")
	if err != nil {
		_ = n.admin.Close()
		return nil, fmt.Errorf("redis-server at %s: %w", addr, err)
	}
	n.pid, _ = strconv.Atoi(infoField(info, "process_id"))
	if n.pid <= 0 {
		_ = n.admin.Close()
		return nil, fmt.Errorf("redis-server at %s: no process_id in INFO", addr)
	}
	return n, nil
}

func (n *node) infoText(ctx context.Context, sections ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return n.admin.Info(ctx, sections...).Result()
}

// version returns the server's redis_version.
func (n *node) version(ctx context.Context) string {
	info, err := n.infoText(ctx, "server")
	if err != nil {
		return "?"
	}
	return infoField(info, "redis_version")
}

// pause freezes the server with SIGSTOP.
func (n *node) pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var err error
	if n.srv != nil {
		err = n.srv.Pause()
	} else {
		err = syscall.Kill(n.pid, syscall.SIGSTOP)
	}
	if err == nil {
		n.paused = true
	}
	return err
}

// resume lets a paused server go on with SIGCONT.
func (n *node) resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.paused {
		return nil
	}
	var err error
	if n.srv != nil {
		err = n.srv.Resume()
	} else {
		err = syscall.Kill(n.pid, syscall.SIGCONT)
	}
	if err == nil {
		n.paused = false
	}
	return err
}

func (n *node) isPaused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

// flush removes every key, so that every cell starts on an empty server.
func (n *node) flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return n.admin.FlushAll(ctx).Err()
}

func (n *node) close() error {
	errs := []error{n.resume(), n.admin.Close()}
	if n.srv != nil {
		errs = append(errs, n.srv.Close())
	}
	return errors.Join(errs...)
}

// serverStats is what one INFO call says about the work a server did.
type serverStats struct {
	calls map[string]int64 // per command, from commandstats (INFO excluded)
	cpu   time.Duration    // used_cpu_user + used_cpu_sys
}

// stats reads INFO cpu and commandstats. A paused node is skipped (ok is
// false): it would not answer.
func (n *node) stats(ctx context.Context) (s serverStats, ok bool) {
	if n.isPaused() {
		return s, false
	}
	info, err := n.infoText(ctx, "cpu", "commandstats")
	if err != nil {
		return s, false
	}
	s.calls = map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		rest, found := strings.CutPrefix(line, "cmdstat_")
		if !found {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		if name == "info" {
			continue // the harness's own
		}
		for _, f := range strings.Split(fields, ",") {
			if v, found := strings.CutPrefix(f, "calls="); found {
				s.calls[name], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	user, _ := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
	sys, _ := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
	s.cpu = time.Duration((user + sys) * float64(time.Second))
	return s, true
}

// memory reads INFO memory and clients: the server's used_memory (bytes)
// and its connected_clients.
func (n *node) memory(ctx context.Context) (used, clients int64, err error) {
	info, err := n.infoText(ctx, "memory", "clients")
	if err != nil {
		return 0, 0, err
	}
	used, err = strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("INFO memory: used_memory: %w", err)
	}
	clients, _ = strconv.ParseInt(infoField(info, "connected_clients"), 10, 64)
	return used, clients, nil
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// env is the set of servers of one harness run: one for the single-node
// scenarios, five for Redlock.
type env struct {
	single *node
	quorum []*node
	back   backends // etcd and PostgreSQL, started on first use
}

// all returns every node once.
func (e *env) all() []*node { return append([]*node{e.single}, e.quorum...) }

// addrs returns the addresses of nodes.
func addrs(nodes []*node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.addr
	}
	return out
}

// flushAll empties every node (resuming paused ones first).
func (e *env) flushAll(ctx context.Context) error {
	var errs []error
	for _, n := range e.all() {
		errs = append(errs, n.resume(), n.flush(ctx))
	}
	return errors.Join(errs...)
}

// resumeAll sends SIGCONT to every node the harness paused.
func (e *env) resumeAll() {
	for _, n := range e.all() {
		_ = n.resume()
	}
}

func (e *env) close() error {
	e.back.close()
	var errs []error
	for _, n := range e.all() {
		if n != nil {
			errs = append(errs, n.close())
		}
	}
	return errors.Join(errs...)
}

// serverCPU is the CPU that etcd and PostgreSQL are pinned to (-servercpu;
// -1: not pinned).
var serverCPU = -1

// quorumNodes is the number of Redlock nodes.
const quorumNodes = 5

// newEnv connects to the given servers, or, where none is given, starts
// redis-servers through internal/redistest (on free loopback ports, not
// pinned).
func newEnv(ctx context.Context, singleAddr string, quorumAddrs []string) (*env, error) {
	e := &env{back: backends{serverCPU: serverCPU}}
	fail := func(err error) (*env, error) {
		_ = e.close()
		return nil, err
	}
	start := func(addr string) (*node, error) {
		var srv *redistest.Server
		if addr == "" {
			var err error
			if srv, err = redistest.New(); err != nil {
				return nil, err
			}
			addr = srv.Addr()
		}
		n, err := newNode(ctx, addr, srv)
		if err != nil && srv != nil {
			_ = srv.Close()
		}
		return n, err
	}
	var err error
	if e.single, err = start(singleAddr); err != nil {
		return fail(err)
	}
	if len(quorumAddrs) != 0 && len(quorumAddrs) != quorumNodes {
		return fail(fmt.Errorf("-nodes: want %d addresses, got %d", quorumNodes, len(quorumAddrs)))
	}
	for i := range quorumNodes {
		addr := ""
		if len(quorumAddrs) > 0 {
			addr = quorumAddrs[i]
		}
		n, err := start(addr)
		if err != nil {
			return fail(err)
		}
		e.quorum = append(e.quorum, n)
	}
	return e, nil
}
