// Package zkfence checks distlock fencing tokens for data kept in
// ZooKeeper: a write is one ZooKeeper multi-op that sets the resource's
// high-water mark (a znode beside the data) at the version the guard read
// and applies the write, so the check and the write commit together or not
// at all, and no other writer can slip in between.
//
// The rule is package fence's: a write is accepted iff its token is at
// least the highest accepted for the resource so far, and a tie only from
// the holder that wrote with that token before. Tokens from any distlock
// engine work; with engine/zookeeper they are the grants' zxids.
//
// (The guard lives in the ZooKeeper engine's module, not in package fence,
// so that users of package fence never download the ZooKeeper client. Its
// errors mirror fence's: StaleError, ErrStale, ErrInvalidArgument.)
package zkfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// ErrStale is matched (errors.Is) by every *StaleError.
var ErrStale = errors.New("zkfence: stale fencing token")

// ErrInvalidArgument is wrapped by the errors for bad input (an empty or
// relative path, an empty holder, the token 0 or a token above
// engine.MaxToken, 2^53-1, which no grant carries, an op of another type or
// on a fence node); nothing is sent then.
var ErrInvalidArgument = errors.New("zkfence: invalid argument")

// StaleError reports a write that the guard rejected: nothing was written.
type StaleError struct {
	Resource string // the fence node
	Token    uint64 // the rejected token
	Highest  uint64 // the highest token accepted for Resource
	Holder   string // the holder that tried to write
}

func (e *StaleError) Error() string {
	msg := fmt.Sprintf("zkfence: stale fencing token %d for %q from holder %q", e.Token, e.Resource, e.Holder)
	if e.Highest == e.Token {
		return msg + ": token already used by another holder"
	}
	return msg + ": highest accepted is " + strconv.FormatUint(e.Highest, 10)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Guard runs fenced writes on a ZooKeeper connection. The high-water mark
// of a resource is the data of its fence node, a persistent znode: the
// token in decimal, "|", and the holder. The fence node is part of the
// resource and must live as long as the data it guards. A Guard is safe
// for concurrent use.
//
// The client library's calls take no context: a call whose context ends
// returns at once with the context's error (its outcome unknown) and
// finishes in the background; Close waits for those.
type Guard struct {
	conn *zk.Conn
	wg   sync.WaitGroup
	// hook, when set (tests), runs between the read of the mark and the
	// multi-op.
	hook func()
	// unversioned (a mutant, tests only) sets the mark at any version.
	unversioned bool
}

// New returns a Guard on conn. It does not take ownership of conn.
func New(conn *zk.Conn) *Guard { return &Guard{conn: conn} }

// Close waits for calls whose context ended while ZooKeeper had not
// answered them (each ends when the ensemble answers or conn is closed).
func (g *Guard) Close() { g.wg.Wait() }

// FenceNodeFor returns the fence node the Set and Get helpers use for the
// data node path: a sibling, path + ".fence".
func FenceNodeFor(path string) string { return path + fenceSuffix }

// fenceSuffix ends every fence node's name that FenceNodeFor makes: a data
// node of that name would be another resource's mark, so the guard's ops
// never touch one.
const fenceSuffix = ".fence"

func mark(token uint64, holder string) []byte {
	return []byte(strconv.FormatUint(token, 10) + "|" + holder)
}

func parseMark(v []byte) (uint64, string, error) {
	digits, holder, ok := strings.Cut(string(v), "|")
	token, err := strconv.ParseUint(digits, 10, 64)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("zkfence: bad high-water mark %q", v)
	}
	return token, holder, nil
}

func validPath(p string) bool { return len(p) > 1 && p[0] == '/' && !strings.HasSuffix(p, "/") }

func validate(fenceNode string, token uint64, holder string) error {
	switch {
	case !validPath(fenceNode):
		return fmt.Errorf("%w: fence node %q is not an absolute znode path", ErrInvalidArgument, fenceNode)
	case token == 0:
		return fmt.Errorf("%w: fencing token 0 for %q", ErrInvalidArgument, fenceNode)
	case token > engine.MaxToken:
		return fmt.Errorf("%w: fencing token %d for %q is above 2^53-1, the largest token a grant carries", ErrInvalidArgument, token, fenceNode)
	case holder == "":
		return fmt.Errorf("%w: empty holder for %q", ErrInvalidArgument, fenceNode)
	}
	return nil
}

// call runs f on the connection and returns when it answers or ctx ends.
func call[T any](ctx context.Context, g *Guard, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
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

// Multi applies ops (each a *zk.CreateRequest, *zk.DeleteRequest,
// *zk.SetDataRequest or *zk.CheckVersionRequest) in one ZooKeeper multi-op
// iff token is not stale for fenceNode, and raises fenceNode's mark to
// token and holder in the same multi-op (creating the node, whose parent
// must exist, on the first write). It returns the responses of ops. On a
// stale token nothing is written and the error is a *StaleError. When one
// of ops fails (a version conflict, a missing node), nothing is written,
// the mark is not raised, and the error is the failing op's (zk.ErrNoNode,
// zk.ErrBadVersion, ...) wrapped. An op on fenceNode, or on any path ending
// in ".fence" (another resource's fence node), is refused with
// ErrInvalidArgument, unsent, and so is a token above engine.MaxToken
// (2^53-1): no grant carries one, and a mark raised to it would refuse every
// real holder of the resource. A context that ends while the multi-op is in
// flight leaves its outcome unknown.
func (g *Guard) Multi(ctx context.Context, fenceNode string, token uint64, holder string, ops ...any) ([]zk.MultiResponse, error) {
	if err := validate(fenceNode, token, holder); err != nil {
		return nil, err
	}
	if err := checkOps(fenceNode, ops); err != nil {
		return nil, err
	}
	m := mark(token, holder)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		type read struct {
			data []byte
			stat *zk.Stat
		}
		r, err := call(ctx, g, func() (read, error) {
			d, s, err := g.conn.Get(fenceNode)
			return read{d, s}, err
		})
		var first any
		creating := false
		switch {
		case errors.Is(err, zk.ErrNoNode):
			first, creating = &zk.CreateRequest{Path: fenceNode, Data: m, Acl: zk.WorldACL(zk.PermAll)}, true
		case err != nil:
			return nil, fmt.Errorf("zkfence: read high-water mark %q: %w", fenceNode, err)
		default:
			highest, who, err := parseMark(r.data)
			if err != nil {
				return nil, err
			}
			if token < highest || (token == highest && who != holder) {
				return nil, &StaleError{Resource: fenceNode, Token: token, Highest: highest, Holder: holder}
			}
			version := r.stat.Version
			if g.unversioned {
				version = -1
			}
			first = &zk.SetDataRequest{Path: fenceNode, Data: m, Version: version}
		}
		if g.hook != nil {
			g.hook()
		}
		resp, err := call(ctx, g, func() ([]zk.MultiResponse, error) {
			return g.conn.Multi(append([]any{first}, ops...)...)
		})
		if err == nil {
			return resp[1:], nil
		}
		// ZooKeeper answers a failed multi-op with the failing op's error
		// (the ops before it ok, those after it "runtime inconsistency"),
		// and the client returns that first error.
		if len(resp) == len(ops)+1 {
			for i, r := range resp {
				switch {
				case r.Error == nil:
					continue
				case i == 0 && (errors.Is(r.Error, zk.ErrBadVersion) || errors.Is(r.Error, zk.ErrNodeExists) || (!creating && errors.Is(r.Error, zk.ErrNoNode))):
					err = nil // the mark changed (or went) since it was read: judge again
				case i == 0:
					return nil, fmt.Errorf("zkfence: write the high-water mark %q: %w", fenceNode, r.Error) // its parent is missing
				default:
					return nil, fmt.Errorf("zkfence: write for %q, op %d: %w", fenceNode, i-1, r.Error)
				}
				break
			}
			if err == nil {
				continue
			}
		}
		return nil, fmt.Errorf("zkfence: write for %q: %w", fenceNode, err)
	}
}

// checkOps refuses ops of a type Multi does not take, and ops that touch
// fenceNode, with an error matching ErrInvalidArgument.
func checkOps(fenceNode string, ops []any) error {
	for _, op := range ops {
		var path string
		switch o := op.(type) {
		case *zk.CreateRequest:
			path = o.Path
		case *zk.DeleteRequest:
			path = o.Path
		case *zk.SetDataRequest:
			path = o.Path
		case *zk.CheckVersionRequest:
			path = o.Path
		default:
			return fmt.Errorf("%w: op of type %T", ErrInvalidArgument, op)
		}
		if path == fenceNode {
			return fmt.Errorf("%w: an op touches the fence node %q", ErrInvalidArgument, fenceNode)
		}
		if strings.HasSuffix(path, fenceSuffix) {
			return fmt.Errorf("%w: an op touches %q, which is the fence node of %q (names ending in %q are fence nodes)", ErrInvalidArgument, path, strings.TrimSuffix(path, fenceSuffix), fenceSuffix)
		}
	}
	return nil
}

// Set writes data to path iff token is not stale for path's resource
// (fence node FenceNodeFor(path)), creating path (a persistent node; its
// parent must exist) when it does not exist.
func (g *Guard) Set(ctx context.Context, path string, data []byte, token uint64, holder string) error {
	if !validPath(path) {
		return fmt.Errorf("%w: path %q is not an absolute znode path", ErrInvalidArgument, path)
	}
	for {
		_, err := g.Multi(ctx, FenceNodeFor(path), token, holder, &zk.SetDataRequest{Path: path, Data: data, Version: -1})
		if !errors.Is(err, zk.ErrNoNode) || isStale(err) {
			return err
		}
		_, err = g.Multi(ctx, FenceNodeFor(path), token, holder, &zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll)})
		if !errors.Is(err, zk.ErrNodeExists) || isStale(err) {
			return err
		}
		// made by another writer in between: set it
	}
}

// Get reads path's data as a fenced read: the mark is raised to token (so
// no older holder can write after this read) in one multi-op that also
// checks that path is still at the version read, so the data returned is
// the resource's at the moment the mark was raised. A missing path reads
// as nil data (its absence checked in the same multi-op: path created and
// deleted again).
func (g *Guard) Get(ctx context.Context, path string, token uint64, holder string) ([]byte, error) {
	if !validPath(path) {
		return nil, fmt.Errorf("%w: path %q is not an absolute znode path", ErrInvalidArgument, path)
	}
	if err := validate(FenceNodeFor(path), token, holder); err != nil {
		return nil, err
	}
	for {
		type read struct {
			data []byte
			stat *zk.Stat
		}
		r, err := call(ctx, g, func() (read, error) {
			d, s, err := g.conn.Get(path)
			return read{d, s}, err
		})
		var check []any
		absent := errors.Is(err, zk.ErrNoNode)
		switch {
		case absent:
			check = []any{&zk.CreateRequest{Path: path, Acl: zk.WorldACL(zk.PermAll)}, &zk.DeleteRequest{Path: path, Version: -1}}
		case err != nil:
			return nil, fmt.Errorf("zkfence: read %q: %w", path, err)
		default:
			check = []any{&zk.CheckVersionRequest{Path: path, Version: r.stat.Version}}
		}
		_, err = g.Multi(ctx, FenceNodeFor(path), token, holder, check...)
		switch {
		case err == nil:
			return r.data, nil
		case isStale(err) || !(errors.Is(err, zk.ErrBadVersion) || (!absent && errors.Is(err, zk.ErrNoNode)) || errors.Is(err, zk.ErrNodeExists)):
			return nil, err // a missing parent too (the absence check's create)
		}
		// path written (or made, or deleted) since it was read: read again
	}
}

func isStale(err error) bool { return errors.Is(err, ErrStale) }

// Highest returns the highest token accepted for fenceNode, 0 if none was.
func (g *Guard) Highest(ctx context.Context, fenceNode string) (uint64, error) {
	d, err := call(ctx, g, func() ([]byte, error) { d, _, err := g.conn.Get(fenceNode); return d, err })
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("zkfence: read high-water mark %q: %w", fenceNode, err)
	}
	token, _, err := parseMark(d)
	return token, err
}
