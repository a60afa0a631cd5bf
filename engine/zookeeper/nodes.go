package zookeeper

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// Node names. A lock name is the container child namePrefix+PathEscape(name)
// of the root; a contender is a sequential child of it named
//
//	_c_<guid>-<owner tag>-<waiter tag or heldTag>-<sequence>
//
// (the _c_<guid>- protection of Curator, so that a create whose answer
// was lost is found by its GUID): a waiter's place in line (ephemeral: a
// waiter is a live process; sequential, so that the line is in arrival
// order) or the holder's child, created by the grant. A holder's child is
// persistent: it lives by its lease (its expiry), not by the session of
// the engine that made the grant, since a lease is handed on (Attach, a
// re-entry of the same owner elsewhere, the CLI's acquire that exits); an
// expired one is deleted by whoever reads the line next (sweep). A
// force-release's mark for the holder it freed is the persistent child
// markPrefix+<owner tag>, holding the freed lease's expiry: it tells every
// lease of that owner, and a reading past that expiry deletes it (Leaks
// sweeps it too).
// The name's node's own data says what happened last (see event); its
// mtime says when.
const (
	namePrefix = "l-"
	protected  = "_c_"
	markPrefix = "_x_"
	hashLen    = 12
	heldTag    = "hhhhhhhhhhhh"
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
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])[:hashLen]
}

// data is what a contender's child holds.
type data struct {
	Owner     string   `json:"o"`
	Waiter    string   `json:"w,omitempty"`
	Held      bool     `json:"h,omitempty"` // the holder's child; false: a place in line
	TTL       int64    `json:"t"`           // ms, from Base
	Base      int64    `json:"b,omitempty"` // ms of the ensemble's clock; 0: the node's mtime
	Count     int      `json:"c,omitempty"`
	Metadata  string   `json:"m,omitempty"`
	Attempt   string   `json:"a,omitempty"`
	Releases  []string `json:"r,omitempty"` // the latest ReleaseOnce ids applied
	Fair      bool     `json:"f,omitempty"`
	NoReserve bool     `json:"n,omitempty"`
	// A shared lock's holder or waiter: its kind and weight (0: a mutex's).
	Kind   engine.Kind `json:"s,omitempty"`
	Weight int         `json:"g,omitempty"`
}

// maxReleases is how many ReleaseOnce ids a child remembers.
const maxReleases = 8

func (d *data) encode() []byte { b, _ := json.Marshal(d); return b }

// event is the name node's data: what changed the lock last.
type event struct {
	Kind string `json:"k"` // released (freed: a release, an expiry, a force-release), granted, metadata
}

// Event kinds.
const (
	evReleased = "released"
	evGranted  = "granted"
	evMetadata = "metadata"
	// A shared grant, and a semaphore's new limit: the head of the line is
	// woken (it may fit beside the holders).
	evShared = "shared"
	evLimit  = "limit"
)

func (v event) encode() []byte { b, _ := json.Marshal(v); return b }

// child is one contender's child as read.
type child struct {
	path  string
	name  string
	seq   string
	owner string // the owner tag
	wait  string // the waiter tag, or heldTag
	d     data
	st    *zk.Stat
}

// expiry returns the child's expiry in the ensemble's clock (ms); for a
// child whose data was not read, the end of time.
func (c *child) expiry() int64 {
	if c.st == nil {
		return math.MaxInt64
	}
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

// line is the state of one lock name: its contenders in arrival order,
// the name node's stat, and an estimate of the ensemble's clock no later
// than when they were read. The name node's last event is read only when
// a decision needs it (eventOf).
type line struct {
	path   string
	parent *zk.Stat // nil: the name has no node
	kids   []child
	marks  []mark // force-release marks
	now    int64
	event  *event   // the name node's last event, once read (eventOf)
	evStat *zk.Stat // the name node's stat read with it
}

// mark is a force-release's mark as read: the freed lease's expiry (ms of
// the ensemble's clock; 0 when its data could not be read: never judged
// expired) and the node's stat.
type mark struct {
	path  string
	name  string
	until int64
	st    *zk.Stat
}

// markOf returns the force-release mark of owner, if l has one.
func (l *line) markOf(owner string) (mark, bool) {
	name := markPrefix + tag(owner)
	for _, m := range l.marks {
		if m.name == name {
			return m, true
		}
	}
	return mark{}, false
}

// expiredMarks returns the marks whose freed lease ended before now: no
// renewal of it can come any more, so nobody needs them.
func (l *line) expiredMarks(now int64) []mark {
	var out []mark
	for _, m := range l.marks {
		if m.until > 0 && now > m.until {
			out = append(out, m)
		}
	}
	return out
}

// readScope says whose data a read of a line fetches beside the listing.
type readScope int

const (
	// decisionChildren: the children a decision needs (see read).
	decisionChildren readScope = iota
	// everyChild: every child's (Inspect, List), without the name node's
	// event.
	everyChild
)

// read lists the name's children with the name node's stat, and reads the
// data of the children a decision needs: the holder's, the first place in
// line's and own's (every child's with everyChild). The reads are sent
// together. A child deleted meanwhile makes the line read again. A place
// in line not read counts as live: only the head's expiry matters to a
// decision (an expired head is deleted, and the next one read in the next
// round). A name without contenders is one listing. The name node's event
// is read with the children only when the listing shows no holder (a free
// lock with a line: its reservation will be judged), else when a decision
// needs it (eventOf); a decision on a listing whose name node changed
// since is no error (a grant is written at the version listed, and fails),
// and a reservation is judged only on the event of the version listed.
func (e *Engine) read(ctx context.Context, name string) (line, error) {
	return e.readLine(ctx, name, "", decisionChildren)
}

// readAll is read with every child's data (Inspect, List).
func (e *Engine) readAll(ctx context.Context, name string) (line, error) {
	return e.readLine(ctx, name, "", everyChild)
}

// readLine reads name's line as read does, with the data of own's child
// too (own is a child's path, "" for none), every child's with everyChild;
// a line that changed while read is read again, up to maxConflicts times.
func (e *Engine) readLine(ctx context.Context, name, own string, scope readScope) (line, error) {
	for range maxConflicts {
		l, again, err := e.readOnce(ctx, name, own, scope)
		if err != nil || !again {
			return l, err
		}
	}
	return line{}, conflict("read", name)
}

// readOnce is one try of readLine: again when a child was deleted while
// read.
func (e *Engine) readOnce(ctx context.Context, name, own string, scope readScope) (line, bool, error) {
	l := line{path: e.namePath(name)}
	names, st, err := e.childrenStat(ctx, l.path)
	if err != nil || st == nil {
		return l, false, err
	}
	l.parent, l.now = st, st.Mtime
	l.list(names)
	// A force-release's mark (rare) is read with the children: its freed
	// holder's renewal is told by it, and a reading past its expiry
	// deletes it.
	markReads := make([]<-chan answer[got], len(l.marks))
	for i, m := range l.marks {
		markReads[i] = e.sendGet(m.path)
	}
	if len(l.kids) == 0 && scope != everyChild {
		// No holder, no line: the listing's stat is all a decision needs.
		l.marks = readMarks(ctx, l.marks, markReads)
		return l, false, nil
	}
	reads := make([]<-chan answer[got], len(l.kids))
	headRead := false
	for i := range l.kids {
		c := &l.kids[i]
		switch {
		case scope == everyChild, c.wait == heldTag, c.path == own:
		case !headRead:
			headRead = true
		default:
			continue
		}
		reads[i] = e.sendGet(c.path)
	}
	var evRead <-chan answer[got]
	if scope != everyChild && !slices.ContainsFunc(l.kids, func(c child) bool { return c.wait == heldTag }) {
		// A free lock with a line: its reservation will be judged, so
		// its event is read with the children (eventOf).
		evRead = e.sendGet(l.path)
	}
	kept := l.kids[:0]
	var failed error
	again := false
	for i, c := range l.kids {
		if reads[i] == nil {
			kept = append(kept, c)
			continue
		}
		g, err := await(ctx, "get", reads[i])
		if err == nil {
			err = json.Unmarshal(g.b, &c.d)
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			again = true // the line changed: read it again
		case err != nil:
			failed = cmp.Or(failed, err)
		default:
			c.st = g.st
			kept = append(kept, c)
			l.now = max(l.now, c.st.Mtime)
		}
	}
	if failed != nil || again {
		return l, again && failed == nil, failed
	}
	if evRead != nil {
		if g, err := await(ctx, "get", evRead); err == nil {
			l.setEvent(g)
		}
	}
	l.kids = kept
	l.marks = readMarks(ctx, l.marks, markReads)
	return l, false, nil
}

// list keeps the children of the name node named names: the contenders,
// in arrival order, and the force-release marks.
func (l *line) list(names []string) {
	for _, n := range names {
		if c, ok := parseChild(l.path, n); ok {
			l.kids = append(l.kids, c)
		} else if strings.HasPrefix(n, markPrefix) {
			l.marks = append(l.marks, mark{path: l.path + "/" + n, name: n})
		}
	}
	slices.SortFunc(l.kids, func(a, b child) int { return strings.Compare(a.seq, b.seq) })
}

// readMarks takes the answers of the reads of marks: a mark found gone is
// dropped, one whose data was not read is kept with no expiry (never
// judged expired).
func readMarks(ctx context.Context, marks []mark, reads []<-chan answer[got]) []mark {
	kept := marks[:0]
	for i, m := range marks {
		g, err := await(ctx, "get", reads[i])
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err == nil && json.Unmarshal(g.b, &m.until) == nil {
			m.st = g.st
		} else {
			m.until = 0
		}
		kept = append(kept, m)
	}
	return kept
}

func ignoreNoNode(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// holder returns the mutex's live holder's child (the one held child of
// a mutex, unless it expired by the clock estimate now).
func (l *line) holder(now int64) (child, bool) {
	for _, c := range l.kids {
		if c.d.Held && c.d.Kind == 0 && now <= c.expiry() {
			return c, true
		}
	}
	return child{}, false
}

// shared returns the live holders of a shared lock, in grant order, and
// the permits they take.
func (l *line) shared(now int64) (holders []child, used int) {
	for _, c := range l.kids {
		if c.d.Held && c.d.Kind != 0 && now <= c.expiry() {
			holders = append(holders, c)
			used += c.d.Weight
		}
	}
	return holders, used
}

// heldBy returns the live held child of owner at now: an expired one,
// which its lease no longer covers (a holder's node outlives it until a
// reading sweeps it), is no hold: a release or renewal of it finds
// nothing, as on the other engines.
func (l *line) heldBy(owner string, now int64) (child, bool) {
	for _, c := range l.kids {
		if c.d.Held && c.d.Owner == owner && now <= c.expiry() {
			return c, true
		}
	}
	return child{}, false
}

// firstPlace returns the path of the first place in line, live or expired
// ("": none).
func (l *line) firstPlace() string {
	for _, c := range l.kids {
		if c.wait != heldTag {
			return c.path
		}
	}
	return ""
}

// waiters returns the live places in line, in arrival order, and the
// expired children (held or not).
func (l *line) waiters(now int64) (live, expired []child) {
	for _, c := range l.kids {
		switch {
		case now > c.expiry():
			expired = append(expired, c)
		case !c.d.Held:
			live = append(live, c)
		}
	}
	return live, expired
}

// reservedFor returns the place in line the lock is reserved for, and
// until when: after a release, for engine.ReserveTTL, the head of the line
// when it is fair or had waited longer than engine.StarvationBound at the
// release, unless it asked for no reservation. errLineChanged: the name
// node changed since the listing (the round runs again).
func (e *Engine) reservedFor(ctx context.Context, l *line, head child) (until int64, ok bool, err error) {
	if l.parent == nil || head.d.NoReserve {
		return 0, false, nil
	}
	ev, st, err := e.eventOf(ctx, l)
	if err != nil || ev.Kind != evReleased {
		return 0, false, err
	}
	released := st.Mtime
	if !head.d.Fair && head.st.Ctime+engine.StarvationBound.Milliseconds() > released {
		return 0, false, nil
	}
	return released + engine.ReserveTTL.Milliseconds(), true, nil
}

// setEvent keeps the name node's data and stat read as g.
func (l *line) setEvent(g got) {
	var ev event
	if len(g.b) > 0 {
		_ = json.Unmarshal(g.b, &ev)
	}
	l.event, l.evStat = &ev, g.st
}

// errLineChanged reports that the name node changed between the listing
// of its line and a later read of it: the round runs again.
var errLineChanged = errors.New("zookeeper: the line changed while read")

// eventOf returns the name node's last event and its stat, read once per
// line, at the version listed (errLineChanged when it is no longer).
func (e *Engine) eventOf(ctx context.Context, l *line) (event, *zk.Stat, error) {
	if l.event == nil {
		b, st, err := e.get(ctx, l.path)
		if errors.Is(err, zk.ErrNoNode) {
			return event{}, nil, errLineChanged
		}
		if err != nil {
			return event{}, nil, err
		}
		l.setEvent(got{b, st})
	}
	if l.evStat.Version != l.parent.Version {
		return event{}, nil, errLineChanged
	}
	return *l.event, l.evStat, nil
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
		if err = e.ensure(ctx, e.root, plainNode); err == nil {
			st, err = e.set(ctx, e.root, nil, -1)
		}
	}
	if err != nil {
		return 0, err
	}
	return st.Mtime, nil
}

// nodeType is the type of node ensure creates.
type nodeType int

const (
	// plainNode is a persistent node.
	plainNode nodeType = iota
	// containerNode is a container: ZooKeeper deletes it once its last
	// child is gone.
	containerNode
)

// ensure creates the node at path, of type typ, and its parents (plain
// nodes), unless it exists.
func (e *Engine) ensure(ctx context.Context, path string, typ nodeType) error {
	_, err := e.ensureMade(ctx, path, typ)
	return err
}

// ensureMade is ensure, reporting whether it made the node.
func (e *Engine) ensureMade(ctx context.Context, path string, typ nodeType) (bool, error) {
	flags := int32(0)
	if typ == containerNode {
		flags = zk.FlagContainer
	}
	_, err := do(ctx, e, "create", func() (string, error) {
		if typ == containerNode {
			return e.conn.CreateContainer(path, nil, flags, zk.WorldACL(zk.PermAll))
		}
		return e.conn.Create(path, nil, flags, zk.WorldACL(zk.PermAll))
	})
	if errors.Is(err, zk.ErrNoNode) {
		if i := strings.LastIndexByte(path, '/'); i > 0 {
			if err := e.ensure(ctx, path[:i], plainNode); err != nil {
				return false, err
			}
			return e.ensureMade(ctx, path, typ)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return false, nil
	}
	return err == nil, err
}

// placed is what a protected create made: the child's path and, for a
// grant, the name node's stat after it (nil when the answer was lost and
// the child was found by its GUID).
type placed struct {
	path   string
	parent *zk.Stat
}

// protectedCreate runs run, which creates a child of the name node parent
// whose name starts with prefix (a GUID in it), and returns what it made.
// When the answer is lost (the connection broke), the child is looked up
// by its prefix: a create that took effect is found, not left behind; when
// the session expired, no child can exist and run runs again. When ctx
// ends before the answer, what run made is handed to undo in the
// background once the answer comes: a contender that gave up leaves
// nothing behind.
func (e *Engine) protectedCreate(ctx context.Context, parent, prefix string, run func() (placed, error), undo func(placed)) (placed, error) {
	for range maxConflicts {
		p, err := e.runProtected(ctx, run, undo)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, zk.ErrNoNode):
			made, merr := e.ensureMade(ctx, parent, containerNode)
			if merr != nil {
				return placed{}, merr
			}
			if !made {
				return placed{}, err // another node of the request is missing
			}
			continue
		case errors.Is(err, zk.ErrSessionExpired):
			continue
		case errors.Is(err, zk.ErrConnectionClosed):
			if ctx.Err() != nil {
				return placed{}, err
			}
			names, lerr := e.children(ctx, parent)
			if lerr != nil {
				return placed{}, lerr
			}
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					return placed{path: parent + "/" + n}, nil
				}
			}
			continue
		}
		return placed{}, err
	}
	return placed{}, conflict("create", parent)
}

func (e *Engine) runProtected(ctx context.Context, run func() (placed, error), undo func(placed)) (placed, error) {
	type answer struct {
		p   placed
		err error
	}
	ch := make(chan answer, 1)
	abandoned := make(chan bool, 1) // whether the caller gave up before the answer
	if !e.run(func() {
		p, err := run()
		ch <- answer{p, err}
		if <-abandoned && err == nil {
			undo(p)
		}
	}) {
		return placed{}, engine.ErrClosed
	}
	select {
	case a := <-ch:
		abandoned <- false
		if a.err != nil && !verdict(a.err) {
			a.err = backendErr("create", a.err)
		}
		return a.p, a.err
	case <-ctx.Done():
		abandoned <- true
		return placed{}, backendErr("create", ctx.Err())
	}
}

// childPrefix returns a new protected name prefix for a child of owner
// (and waiter, or heldTag for a holder's child).
func childPrefix(owner, waiterTag string) string {
	var g [16]byte
	_, _ = rand.Read(g[:])
	return protected + hex.EncodeToString(g[:]) + "-" + tag(owner) + "-" + waiterTag + "-"
}

// ms converts a duration to the ensemble clock's milliseconds, rounding up.
func ms(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// left converts a time left in ms to a duration.
func left(msLeft int64) time.Duration { return time.Duration(msLeft) * time.Millisecond }
