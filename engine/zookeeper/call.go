package zookeeper

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// do runs one request of the client library, which takes no context, and
// returns when it answers or ctx ends, whichever comes first (the request
// then runs on to its answer in the background, on a worker Close waits
// for). Its error is a *BackendError, except the answers that are not
// failures (ErrNoNode, ErrNodeExists, ErrBadVersion, ErrNotEmpty), returned
// as they are for the caller to judge.
func do[T any](ctx context.Context, e *Engine, op string, f func() (T, error)) (T, error) {
	return await(ctx, op, send(e, f))
}

// answer is a request's answer.
type answer[T any] struct {
	v   T
	err error
}

// send starts the request f on a worker; its answer comes on the channel
// (ErrClosed at once when the engine is closed).
func send[T any](e *Engine, f func() (T, error)) <-chan answer[T] {
	ch := make(chan answer[T], 1)
	if !e.run(func() {
		v, err := f()
		ch <- answer[T]{v, err}
	}) {
		ch <- answer[T]{err: engine.ErrClosed}
	}
	return ch
}

// await returns the answer of a request sent (see do), or ctx's error
// when ctx ends first.
func await[T any](ctx context.Context, op string, ch <-chan answer[T]) (T, error) {
	select {
	case a := <-ch:
		return a.of(op)
	case <-ctx.Done():
		var zero T
		return zero, backendErr(op, ctx.Err())
	}
}

// of is the answer as a call returns it (see do).
func (a answer[T]) of(op string) (T, error) {
	if a.err != nil && !verdict(a.err) && !errors.Is(a.err, engine.ErrClosed) {
		a.err = backendErr(op, a.err)
	}
	return a.v, a.err
}

// doSettled is do for a write whose answer matters after its caller gave
// up: when ctx ends first, late gets the answer once it comes (on the
// worker, which Close waits for), so that a write the ensemble applied
// late (a stalled or paused ensemble runs a session's queued requests when
// it resumes) can be judged and undone. late runs instead of the return,
// never besides it.
func doSettled[T any](ctx context.Context, e *Engine, op string, f func() (T, error), late func(T, error)) (T, error) {
	var mu sync.Mutex
	abandoned, answered := false, false
	ch := make(chan answer[T], 1)
	if !e.run(func() {
		v, err := f()
		mu.Lock()
		gone := abandoned
		answered = !gone
		mu.Unlock()
		if gone {
			late(v, err)
			return
		}
		ch <- answer[T]{v, err}
	}) {
		ch <- answer[T]{err: engine.ErrClosed}
	}
	select {
	case a := <-ch:
		return a.of(op)
	case <-ctx.Done():
		mu.Lock()
		if answered {
			mu.Unlock()
			return (<-ch).of(op)
		}
		abandoned = true
		mu.Unlock()
		var zero T
		return zero, backendErr(op, ctx.Err())
	}
}

// verdict reports whether err is ZooKeeper's answer about the tree (a
// node missing or present, a version changed), not a failed request.
func verdict(err error) bool {
	return errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists) ||
		errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNotEmpty)
}

// get reads a node's data and stat.
func (e *Engine) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	g, err := await(ctx, "get", e.sendGet(path))
	return g.b, g.st, err
}

// got is a node's data and stat as read.
type got struct {
	b  []byte
	st *zk.Stat
}

// sendGet starts a read of a node's data and stat (see send): reads
// started together are answered in one round trip.
func (e *Engine) sendGet(path string) <-chan answer[got] {
	return send(e, func() (got, error) {
		b, st, err := e.conn.Get(path)
		return got{b, st}, err
	})
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

// catchUp brings the member the session reads from up to date with every
// transaction answered, to any session, before it was called: it writes
// the root's data (clock), and a member answers a write only once it has
// applied every commit before it. A reading may come from before such a
// transaction: a follower applies commits behind the leader, and the
// leader applies a commit after it sends it to its followers, which may
// answer their clients first. ZooKeeper's sync does not cover the
// leader: it does not match a sync with commits.
func (e *Engine) catchUp(ctx context.Context) error {
	_, err := e.clock(ctx)
	return err
}
