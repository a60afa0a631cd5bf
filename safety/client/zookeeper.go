package client

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zkfence"
)

// The ZooKeeper lock service (engine/zookeeper on an ensemble; Nodes are
// the members' client addresses) and its resource: both copies are znodes
// of the same ensemble, the fenced one read and written through zkfence
// (the read raises the mark in a multi-op that checks the data's version),
// the control with plain Get/Set.

// ZKParent is the parent znode of the resource copies (the lab creates it).
const ZKParent = "/lab"

// ZK paths of the resource copies of lock name; the fenced copy's fence
// node is zkfence.FenceNodeFor(ZKDataPath(name)).
func ZKDataPath(name string) string    { return ZKParent + "/res-" + name }
func ZKControlPath(name string) string { return ZKParent + "/ctl-" + name }

// newZKEngine dials the ensemble with cfg.Session (the lease ttl may not
// exceed it).
func newZKEngine(cfg Config) (engine.Engine, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := zkengine.Dial(ctx, cfg.Nodes, cfg.Session)
	if err != nil {
		return nil, func() {}, err
	}
	return e, func() {}, nil
}

// NewZKConn connects to the ensemble at servers with a session of
// session, without the client library's log lines.
func NewZKConn(servers []string, session time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect(servers, session, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return nil, err
	}
	go func() {
		for range events { //nolint:revive // drained until the connection closes
		}
	}()
	return conn, nil
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkStore keeps both copies in the lock's ensemble.
type zkStore struct {
	conn  *zk.Conn
	guard *zkfence.Guard
	name  string
	// noFence: the fenced copy read and written with plain Get/Set
	// (Config.NoFence, the fence-off negative control).
	noFence bool
}

func newZKStore(cfg Config) (Store, error) {
	conn, err := NewZKConn(cfg.Nodes, cfg.Session)
	if err != nil {
		return nil, err
	}
	return &zkStore{conn: conn, guard: zkfence.New(conn), name: cfg.Name, noFence: cfg.NoFence}, nil
}

func (s *zkStore) Close() error {
	s.conn.Close()
	s.guard.Close()
	return nil
}

func (s *zkStore) ReadFenced(ctx context.Context, token uint64, holder string) (State, error) {
	if s.noFence {
		return zkRead(ctx, s.conn, ZKDataPath(s.name))
	}
	v, err := s.guard.Get(ctx, ZKDataPath(s.name), token, holder)
	if err != nil {
		return State{}, err
	}
	return decodeState(v)
}

func (s *zkStore) WriteFenced(ctx context.Context, token uint64, holder string, st State) error {
	if s.noFence {
		return zkWrite(ctx, s.conn, ZKDataPath(s.name), st)
	}
	return s.guard.Set(ctx, ZKDataPath(s.name), []byte(encodeState(st)), token, holder)
}

func (s *zkStore) ReadControl(ctx context.Context) (State, error) {
	return zkRead(ctx, s.conn, ZKControlPath(s.name))
}

// WriteControl sets the control node (made by the lab before the run), at
// any version: it trusts the lock. A write that found the connection gone
// is sent again once the client library has connected again (a session
// that expired while the client was stopped leaves its socket closed), as
// an application's storage client would: the control must take a late
// write for its teeth to show, and writing the same state twice changes
// nothing.
func (s *zkStore) WriteControl(ctx context.Context, st State) error {
	for tries := 1; ; tries++ {
		err := zkWrite(ctx, s.conn, ZKControlPath(s.name), st)
		if err == nil || tries == controlTries || !connectionLost(err) {
			return err
		}
		select {
		case <-time.After(controlPause):
		case <-ctx.Done():
			return err
		}
	}
}

// A control write that lost its connection is tried controlTries times in
// all, controlPause apart.
const (
	controlTries = 20
	controlPause = 50 * time.Millisecond
)

// connectionLost reports whether err says the request found no working
// connection (the client library reconnects by itself).
func connectionLost(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// zkWrite sets path (made by the lab before the run) at any version.
func zkWrite(ctx context.Context, conn *zk.Conn, path string, st State) error {
	_, err := zkCall(ctx, func() (*zk.Stat, error) { return conn.Set(path, []byte(encodeState(st)), -1) })
	return err
}

// zkCall runs f and returns when it answers or ctx ends (the call then
// finishes in the background: the library's calls take no context; each
// ends when the ensemble answers or the connection closes).
func zkCall[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func zkRead(ctx context.Context, conn *zk.Conn, path string) (State, error) {
	v, err := zkCall(ctx, func() ([]byte, error) { v, _, err := conn.Get(path); return v, err })
	if errors.Is(err, zk.ErrNoNode) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	return decodeState(v)
}

// ZKSetup creates the resource copies' parent and the control node (and,
// for the fence-off control, which writes it plainly, the data node).
func ZKSetup(ctx context.Context, conn *zk.Conn, name string, noFence bool) error {
	paths := []string{ZKParent, ZKControlPath(name)}
	if noFence {
		paths = append(paths, ZKDataPath(name))
	}
	for _, p := range paths {
		_, err := zkCall(ctx, func() (string, error) { return conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zookeeper: create %s: %w", p, err)
		}
	}
	return nil
}

// ReadFinalZK reads both copies (after the run).
func ReadFinalZK(ctx context.Context, conn *zk.Conn, name string) (fenced, control State, err error) {
	f, err1 := zkRead(ctx, conn, ZKDataPath(name))
	c, err2 := zkRead(ctx, conn, ZKControlPath(name))
	return f, c, errors.Join(err1, err2)
}
