package zookeeper

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Node names. A lock name is the container child namePrefix+PathEscape(name)
// of the root; a contender is an ephemeral sequential child of it named
//
//	_c_<guid>-<owner hash>-<waiter hash>-<sequence>
//
// (the _c_<guid>- protection of Curator, so that a create whose answer
// was lost is found by its GUID). A force-release's mark for the holder it
// freed is the ephemeral child markPrefix+<owner hash>.
const (
	namePrefix  = "l-"
	protected   = "_c_"
	markPrefix  = "_x_"
	hashLen     = 12
	noWaiterTag = "000000000000"
)

// namePath returns the path of the lock name's node.
func (e *Engine) namePath(name string) string {
	return e.root + "/" + namePrefix + url.PathEscape(name)
}

// lockName returns the lock name of a child of the root ("", false for a
// child that is not a lock's).
func lockName(child string) (string, bool) {
	esc, ok := strings.CutPrefix(child, namePrefix)
	if !ok {
		return "", false
	}
	n, err := url.PathUnescape(esc)
	return n, err == nil
}

// tag is the short hash of an owner or waiter id in a child's name.
func tag(id string) string {
	if id == "" {
		return noWaiterTag
	}
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])[:hashLen]
}

// data is what a contender's child holds.
type data struct {
	Owner    string   `json:"o"`
	Waiter   string   `json:"w,omitempty"`
	Held     bool     `json:"h,omitempty"` // confirmed by its own acquire; false: a place in line
	TTL      int64    `json:"t"`           // ms, from Base
	Base     int64    `json:"b,omitempty"` // ms of the ensemble's clock; 0: the node's mtime
	Count    int      `json:"c,omitempty"`
	Metadata string   `json:"m,omitempty"`
	Attempt  string   `json:"a,omitempty"`
	Releases []string `json:"r,omitempty"` // the latest ReleaseOnce ids applied
}

// maxReleases is how many ReleaseOnce ids a child remembers.
const maxReleases = 8

func (d *data) encode() []byte { b, _ := json.Marshal(d); return b }

// child is one contender's child as read.
type child struct {
	path  string
	name  string
	seq   string
	owner string // the owner tag
	wait  string // the waiter tag
	d     data
	st    *zk.Stat
}

// expiry returns the child's expiry in the ensemble's clock (ms).
func (c *child) expiry() int64 {
	base := c.d.Base
	if base == 0 {
		base = c.st.Mtime
	}
	return base + c.d.TTL
}

// parseChild parses a contender's child name; false for other children.
func parseChild(parent, name string) (child, bool) {
	rest, ok := strings.CutPrefix(name, protected)
	if !ok {
		return child{}, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 4 || len(parts[3]) != 10 {
		return child{}, false
	}
	return child{path: parent + "/" + name, name: name, owner: parts[1], wait: parts[2], seq: parts[3]}, true
}

// line is the state of one lock name: its contenders in line order, and
// an estimate of the ensemble's clock no later than when they were read.
type line struct {
	path  string
	kids  []child
	marks []string // force-release marks' names
	now   int64
}

// read lists the name's children and reads every contender's data (the
// reads are sent together). Children deleted meanwhile are left out.
func (e *Engine) read(ctx context.Context, name string) (line, error) {
	l := line{path: e.namePath(name)}
	names, err := e.children(ctx, l.path)
	if err != nil {
		return l, err
	}
	for _, n := range names {
		if c, ok := parseChild(l.path, n); ok {
			l.kids = append(l.kids, c)
		} else if strings.HasPrefix(n, markPrefix) {
			l.marks = append(l.marks, n)
		}
	}
	slices.SortFunc(l.kids, func(a, b child) int { return strings.Compare(a.seq, b.seq) })
	errs := make([]error, len(l.kids))
	done := make(chan struct{}, len(l.kids))
	for i := range l.kids {
		go func() {
			defer func() { done <- struct{}{} }()
			b, st, err := e.get(ctx, l.kids[i].path)
			if err == nil {
				err = json.Unmarshal(b, &l.kids[i].d)
			}
			l.kids[i].st, errs[i] = st, err
		}()
	}
	for range l.kids {
		<-done
	}
	kept := l.kids[:0]
	for i, c := range l.kids {
		switch {
		case errors.Is(errs[i], zk.ErrNoNode):
		case errs[i] != nil:
			return l, errs[i]
		default:
			kept = append(kept, c)
			l.now = max(l.now, c.st.Mtime)
		}
	}
	l.kids = kept
	return l, nil
}

// live returns the children that have not expired by the clock estimate
// now, and the expired ones.
func (l *line) live(now int64) (live, expired []child) {
	for _, c := range l.kids {
		if now > c.expiry() {
			expired = append(expired, c)
		} else {
			live = append(live, c)
		}
	}
	return live, expired
}

// find returns the index in kids of the child at path, or -1.
func find(kids []child, path string) int {
	return slices.IndexFunc(kids, func(c child) bool { return c.path == path })
}

// clock returns the ensemble's clock now: the mtime of a write of the
// root node's data (creating the root when missing).
func (e *Engine) clock(ctx context.Context) (int64, error) {
	st, err := e.set(ctx, e.root, nil, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if err = e.ensure(ctx, e.root, false); err == nil {
			st, err = e.set(ctx, e.root, nil, -1)
		}
	}
	if err != nil {
		return 0, err
	}
	return st.Mtime, nil
}

// ensure creates the node at path (a container when container is true),
// and its parents (plain nodes), unless it exists.
func (e *Engine) ensure(ctx context.Context, path string, container bool) error {
	flags := int32(0)
	if container {
		flags = zk.FlagContainer
	}
	_, err := do(ctx, e, "create", func() (string, error) {
		if container {
			return e.conn.CreateContainer(path, nil, flags, zk.WorldACL(zk.PermAll))
		}
		return e.conn.Create(path, nil, flags, zk.WorldACL(zk.PermAll))
	})
	if errors.Is(err, zk.ErrNoNode) {
		if i := strings.LastIndexByte(path, '/'); i > 0 {
			if err := e.ensure(ctx, path[:i], false); err != nil {
				return err
			}
			return e.ensure(ctx, path, container)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// createChild creates a contender's child of the name's node with a
// protected name, and returns its path. When the answer to the create is
// lost (the connection broke), the child is looked up by its GUID: a create
// that took effect is found, not left behind. When the session expired, no
// child can exist and the create is sent again.
func (e *Engine) createChild(ctx context.Context, parent, owner, waiter string, d *data) (string, error) {
	var g [16]byte
	_, _ = rand.Read(g[:])
	guid := hex.EncodeToString(g[:])
	prefix := protected + guid + "-" + tag(owner) + "-" + tag(waiter) + "-"
	for range maxConflicts {
		p, err := e.create(ctx, parent+"/"+prefix, d.encode())
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := e.ensure(ctx, parent, true); err != nil {
				return "", err
			}
			continue
		case errors.Is(err, zk.ErrSessionExpired):
			continue
		case errors.Is(err, zk.ErrConnectionClosed):
			if ctx.Err() != nil {
				return "", err
			}
			names, lerr := e.children(ctx, parent)
			if lerr != nil {
				return "", lerr
			}
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					return parent + "/" + n, nil
				}
			}
			continue
		}
		return "", err
	}
	return "", conflict("create", parent)
}

// create creates an ephemeral sequential node. When ctx ends before the
// answer, a node the create makes is deleted in the background once the
// answer comes: a contender that gave up leaves nothing in line.
func (e *Engine) create(ctx context.Context, path string, b []byte) (string, error) {
	type answer struct {
		p   string
		err error
	}
	ch := make(chan answer, 1)
	abandoned := make(chan bool, 1) // whether the caller gave up before the answer
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		p, err := e.conn.Create(path, b, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		ch <- answer{p, err}
		if <-abandoned && err == nil {
			_ = e.conn.Delete(p, -1)
		}
	}()
	select {
	case a := <-ch:
		abandoned <- false
		if a.err != nil && !verdict(a.err) {
			a.err = backendErr("create", a.err)
		}
		return a.p, a.err
	case <-ctx.Done():
		abandoned <- true
		return "", backendErr("create", ctx.Err())
	}
}

// ms converts a duration to the ensemble clock's milliseconds, rounding up.
func ms(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// left converts a time left in ms to a duration.
func left(msLeft int64) time.Duration { return time.Duration(msLeft) * time.Millisecond }
