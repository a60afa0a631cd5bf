package zookeeper

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// do runs one request of the client library, which takes no context, and
// returns when it answers or ctx ends, whichever comes first (the request
// then runs on to its answer in the background, counted by e.bg). Its
// error is a *BackendError, except the answers that are not failures
// (ErrNoNode, ErrNodeExists, ErrBadVersion, ErrNotEmpty), returned as they
// are for the caller to judge.
func do[T any](ctx context.Context, e *Engine, op string, f func() (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	ch := make(chan answer, 1)
	if !e.begin() {
		var zero T
		return zero, engine.ErrClosed
	}
	go func() {
		defer e.bg.Done()
		v, err := f()
		ch <- answer{v, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil && !verdict(a.err) {
			a.err = backendErr(op, a.err)
		}
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, backendErr(op, ctx.Err())
	}
}

// begin counts a background request in e.bg, unless the engine is closed
// (false): Close's wait then never races with a new request's Add.
func (e *Engine) begin() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.bg.Add(1)
	return true
}

// verdict reports whether err is ZooKeeper's answer about the tree (a
// node missing or present, a version changed), not a failed request.
func verdict(err error) bool {
	return errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists) ||
		errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNotEmpty)
}

// get reads a node's data and stat.
func (e *Engine) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	type got struct {
		b  []byte
		st *zk.Stat
	}
	g, err := do(ctx, e, "get", func() (got, error) {
		b, st, err := e.conn.Get(path)
		return got{b, st}, err
	})
	return g.b, g.st, err
}

// set writes a node's data if its version is version (-1: any).
func (e *Engine) set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	return do(ctx, e, "set", func() (*zk.Stat, error) { return e.conn.Set(path, data, version) })
}

// del deletes a node if its version is version (-1: any).
func (e *Engine) del(ctx context.Context, path string, version int32) error {
	_, err := do(ctx, e, "delete", func() (struct{}, error) { return struct{}{}, e.conn.Delete(path, version) })
	return err
}

// children lists a node's children; none when it does not exist.
func (e *Engine) children(ctx context.Context, path string) ([]string, error) {
	kids, _, err := e.childrenStat(ctx, path)
	return kids, err
}

// childrenStat lists a node's children with the node's stat (nil, and no
// children, when it does not exist).
func (e *Engine) childrenStat(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	type got struct {
		kids []string
		st   *zk.Stat
	}
	g, err := do(ctx, e, "list", func() (got, error) {
		kids, st, err := e.conn.Children(path)
		return got{kids, st}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	return g.kids, g.st, err
}

// multi runs ops as one transaction; its error is the first failed op's.
func (e *Engine) multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return do(ctx, e, "multi", func() ([]zk.MultiResponse, error) { return e.conn.Multi(ops...) })
}

// sync makes the member the session reads from catch up with the leader
// on path (a follower may serve a read from before a write another
// session saw answered).
func (e *Engine) sync(ctx context.Context, path string) error {
	_, err := do(ctx, e, "sync", func() (string, error) { return e.conn.Sync(path) })
	return err
}
