package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// inspectLine reads the ensemble's clock and then name's line with every
// child's data, and returns the line and the clock estimate.
func (e *Engine) inspectLine(ctx context.Context, name string) (line, int64, error) {
	if err := e.check(ctx); err != nil {
		return line{}, 0, err
	}
	now, err := e.clock(ctx)
	if err != nil {
		return line{}, 0, err
	}
	l, err := e.readAll(ctx, name)
	if err != nil {
		return line{}, 0, err
	}
	return l, max(now, l.now), nil
}

// info describes the line at the clock estimate now.
func (l *line) info(name string, now int64) engine.Info {
	info := engine.Info{Name: name}
	if c, ok := l.holder(now); ok {
		info.Held, info.Owner, info.Count, info.Metadata = true, c.d.Owner, c.d.Count, c.d.Metadata
		info.Token, info.TTL = uint64(c.st.Czxid), left(c.expiry()-now)
		info.HighWater = info.Token // the tokens before it went with their children
		info.Holders = []engine.Holder{{Owner: c.d.Owner, Count: c.d.Count, Token: info.Token,
			TTL: info.TTL, Metadata: c.d.Metadata, Weight: 1}}
	}
	info.Waiters, info.Queue = l.queued(now, mutexRequests)
	return info
}

// requestKind says whose places in line queued lists: a mutex's requests
// or a shared lock's (of either shared kind).
type requestKind int

const (
	// mutexRequests: the places of requests for the mutex.
	mutexRequests requestKind = iota
	// sharedRequests: the places of requests for the shared lock.
	sharedRequests
)

// queued returns the live places in line of the requests of kind: their
// count, and the first engine.MaxQueueListed of them in arrival order as
// engine.Info.Queue lists them (each its waiter id and its time since the
// place was made).
func (l *line) queued(now int64, kind requestKind) (int, []engine.Waiter) {
	line, _ := l.waiters(now)
	n, q := 0, []engine.Waiter{}
	for _, c := range line {
		if (c.d.Kind != 0) != (kind == sharedRequests) {
			continue
		}
		n++
		if len(q) < engine.MaxQueueListed {
			q = append(q, engine.Waiter{ID: c.d.Waiter, Waited: left(max(0, now-c.st.Ctime))})
		}
	}
	return n, q
}

// sharedInfo describes the shared lock name, whose line l was read at the
// clock estimate now, with its kind record.
func (e *Engine) sharedInfo(ctx context.Context, name string, l *line, now int64) (engine.Info, error) {
	info := engine.Info{Name: name}
	rec, ok, err := e.readKind(ctx, name)
	if err != nil || !ok {
		return info, err
	}
	info.Kind, info.Limit = rec.Kind, rec.Limit
	holders, _ := l.shared(now)
	for _, c := range holders {
		h := engine.Holder{Owner: c.d.Owner, Count: c.d.Count, Token: uint64(c.st.Czxid),
			TTL: left(c.expiry() - now), Metadata: c.d.Metadata, Weight: c.d.Weight}
		info.Holders = append(info.Holders, h)
		info.Token = max(info.Token, h.Token)
	}
	info.Held, info.HighWater = len(holders) > 0, info.Token
	info.Waiters, info.Queue = l.queued(now, sharedRequests)
	return info, nil
}

// describe is List's view of name's line l at now, Inspect's
// (engine.Describe): the shared lock's when shared holders hold it, or
// when its requests wait and no mutex holds the name; the mutex's
// otherwise. The kind record is read only when the line has a shared
// holder or request.
func (e *Engine) describe(ctx context.Context, name string, l *line, now int64) (engine.Info, error) {
	mutex := l.info(name, now)
	hs, _ := l.shared(now)
	if n, _ := l.queued(now, sharedRequests); len(hs) == 0 && n == 0 {
		return mutex, nil
	}
	shared, err := e.sharedInfo(ctx, name, l, now)
	if err != nil {
		return engine.Info{}, err
	}
	return engine.Describe(mutex, shared), nil
}

// listed reports whether List shows the lock info describes: held, or a
// shared lock waited for (a mutex's waiters alone are not listed).
func listed(info engine.Info) bool {
	return info.Held || info.Kind != engine.Mutex && info.Waiters > 0
}

// List implements engine.Lister: the locks whose names start with prefix,
// held, or (a semaphore or RW lock) waited for, in name order, one page
// of at most limit names a call (cursor: the last name of the previous
// page).
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	names, err := e.names(ctx, prefix, cursor)
	if err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	next := ""
	if len(names) > limit {
		names, next = names[:limit], names[limit-1]
	}
	now, err := e.clock(ctx)
	if err != nil {
		return nil, "", err
	}
	var infos []engine.Info
	for _, n := range names {
		l, err := e.readAll(ctx, n)
		if err != nil {
			return nil, "", err
		}
		info, err := e.describe(ctx, n, &l, max(now, l.now))
		if err != nil {
			return nil, "", err
		}
		if listed(info) {
			infos = append(infos, info)
		}
	}
	return infos, next, nil
}

// names returns the lock names under the root that start with prefix and
// sort after cursor, in order.
func (e *Engine) names(ctx context.Context, prefix, cursor string) ([]string, error) {
	kids, err := e.children(ctx, e.root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, k := range kids {
		if n, ok := lockName(k); ok && strings.HasPrefix(n, prefix) && n > cursor {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Leaks implements engine.LeakFinder. Every node the engine writes goes
// by itself or with the next reading of its line, but a shared lock's kind
// record (kept on purpose, kind.go): a lock name's node is a container
// (ZooKeeper deletes it once empty), a waiter's place is ephemeral, a
// holder's child (persistent: it lives by its lease) is deleted by its
// release, or once expired by whoever reads the line next, and a
// force-release's mark (persistent) by its freed holder's renewal, or
// once the freed lease ended by the next reading. So a holder's child
// whose lease is live, within maxTTL, and a mark whose freed lease has not
// ended are expected, not leaks, and those that have ended are swept
// (below). A leak is what is really left behind: a holder's child whose
// expiry is beyond maxTTL from now, any other persistent node under a
// name (left by another tool), or a child of the root that is no lock's. A countdown latch
// still counting (its node has no expiry by design) is reported with type
// LatchLeakType, under the prefix of its name as a lock is. A name's own
// node is not judged: the ensemble reports a container's stat like a plain
// node's (ephemeralOwner 0). The ensemble's clock is read with a write of
// the root's data (as Inspect does). Leaks changes nothing a live lock
// has: like any reading of a line, it sweeps the children that have
// ended (an expired holder's, with the release recorded as sweep
// records it; an expired mark), which the next acquire of the name would
// sweep; they are not reported.
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	kids, err := e.children(ctx, e.root)
	if err != nil {
		return nil, "", err
	}
	slices.Sort(kids)
	limit = max(limit, 1)
	var now int64
	var leaks []engine.Leak
	for i, k := range kids {
		if k <= cursor {
			continue
		}
		if len(leaks) >= limit {
			return leaks, kids[i-1], nil
		}
		if strings.HasPrefix(k, kindPrefix) {
			continue // a shared lock's kind and limit: kept on purpose (kind.go)
		}
		if ln, ok := latchName(k); ok {
			if strings.HasPrefix(ln, prefix) {
				found, err := e.latchLeak(ctx, e.root+"/"+k)
				if err != nil {
					return nil, "", err
				}
				leaks = append(leaks, found...)
			}
			continue
		}
		n, ok := lockName(k)
		if (ok && !strings.HasPrefix(n, prefix)) || (!ok && prefix != "") {
			continue
		}
		if ok && now == 0 {
			if now, err = e.clock(ctx); err != nil {
				return nil, "", err
			}
		}
		found, err := e.leaksOf(ctx, e.root+"/"+k, n, now, ms(maxTTL))
		if err != nil {
			return nil, "", err
		}
		leaks = append(leaks, found...)
	}
	return leaks, "", nil
}

// LatchLeakType is the Leak.Type of a countdown latch still counting: its
// node has no expiry by design (it goes when its count reaches zero), and
// deleting it opens the latch.
const LatchLeakType = "latch znode"

// latchName returns the latch name of a child of the root ("", false for
// a child that is not a latch's).
func latchName(child string) (string, bool) {
	esc, ok := strings.CutPrefix(child, latchPrefix)
	if !ok {
		return "", false
	}
	n, err := url.PathUnescape(esc)
	return n, err == nil
}

// latchLeak reports the persistent node at a latch's path, if it is
// there: a latch still counting (type LatchLeakType), or a node that is
// not one (left by another tool). An ephemeral node goes with its session.
func (e *Engine) latchLeak(ctx context.Context, path string) ([]engine.Leak, error) {
	b, st, err := e.get(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil || st.EphemeralOwner != 0 {
		return nil, err
	}
	leak := engine.Leak{Key: path, Kind: engine.LeakOther, Type: "persistent znode", TTL: -1}
	var rec latchRecord
	if json.Unmarshal(b, &rec) == nil && rec.Count > 0 {
		leak.Type = LatchLeakType
	}
	return []engine.Leak{leak}, nil
}

// leaksOf reports what is left behind at and under path (a root child;
// a lock's when name is not ""), judged at now, the ensemble's clock (ms),
// with maxTTL (ms) the longest time left a lease may have.
func (e *Engine) leaksOf(ctx context.Context, path, name string, now, maxTTL int64) ([]engine.Leak, error) {
	_, st, err := e.get(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var leaks []engine.Leak
	kind := engine.LeakLock
	if name == "" {
		kind = engine.LeakOther
	}
	if st.EphemeralOwner == 0 && name == "" {
		// A lock name's node is not judged: ZooKeeper (3.8) reports a
		// container's ephemeralOwner as 0, like a plain node's.
		leaks = append(leaks, engine.Leak{Key: path, Name: name, Kind: kind, Type: "persistent znode", TTL: -1})
	}
	kids, err := e.children(ctx, path)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		b, cst, err := e.get(ctx, path+"/"+k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if cst.EphemeralOwner != 0 {
			continue // a waiter's place: it goes with its session
		}
		leak := engine.Leak{Key: path + "/" + k, Name: name, Kind: kind, Type: "persistent znode", TTL: -1}
		if name != "" {
			at := max(now, cst.Mtime)
			typ, ttl, ok := judged(path, k, b, cst, at, maxTTL)
			if ok {
				continue
			}
			if typ == expiredHolder || typ == expiredMark {
				// The engine's own, ended: swept at the version read as
				// the next reading of the line would (sweep: an expired
				// holder's child goes with a release recorded, which
				// reserves the lock for a fair head), not a leak.
				err := e.del(ctx, path+"/"+k, cst.Version)
				if typ == expiredHolder {
					err = e.free(ctx, child{path: path + "/" + k, st: cst})
				}
				if err != nil && !verdict(err) {
					return nil, err
				}
				continue
			}
			if typ != "" {
				leak.Type, leak.TTL = typ, ttl
			}
		}
		leaks = append(leaks, leak)
	}
	return leaks, nil
}

// The types judged gives the engine's own children that have ended: Leaks
// sweeps them rather than report them.
const (
	expiredHolder = "expired holder znode"
	expiredMark   = "expired force-release mark znode"
)

// judged tells what the persistent child name of the lock node parent,
// with data b and stat st, is at now (ms of the ensemble's clock): ok
// when it is expected (a holder's child whose lease is live and ends
// within maxTTL ms, a force-release's mark whose freed lease has not
// ended); otherwise, for a holder's child or a mark, the leak's type and
// time left (negative: it never goes by itself; typ "": not the engine's).
func judged(parent, name string, b []byte, st *zk.Stat, now, maxTTL int64) (typ string, timeLeft time.Duration, ok bool) {
	if c, isChild := parseChild(parent, name); isChild && c.wait == heldTag {
		if json.Unmarshal(b, &c.d) != nil || !c.d.Held {
			return "", 0, false
		}
		c.st = st
		switch exp := c.expiry(); {
		case now > exp:
			// Nobody read the line since it expired: the next reading
			// sweeps it (Leaks does).
			return expiredHolder, -1, false
		case exp > now+maxTTL:
			return "holder znode beyond max ttl", left(exp - now), false
		}
		return "", 0, true
	}
	if strings.HasPrefix(name, markPrefix) {
		var until int64
		if json.Unmarshal(b, &until) != nil {
			return "", 0, false
		}
		if now > until {
			return expiredMark, -1, false
		}
		return "", 0, true
	}
	return "", 0, false
}
