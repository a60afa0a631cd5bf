package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// Listing tunables: the smallest SCAN COUNT hint, and how many SCAN round
// trips one page may take before it returns what it found (possibly
// nothing) with a cursor to go on from.
const (
	minScanCount  = 100
	maxScanRounds = 16
)

var (
	_ engine.Lister     = (*Engine)(nil)
	_ engine.LeakFinder = (*Engine)(nil)
)

// List implements engine.Lister with SCAN (never KEYS): the locks whose
// names start with prefix, the mutexes read with one pipelined round trip
// per page (the value, PTTL, the fencing high-water and the number of
// waiting subscribers, as Inspect reads them), and the shared locks held or
// waited for (found by their state key, distlock:{NAME}:s) as
// Inspect reads them, one round trip each. Fencing high-water keys
// are not listed, nor keys at a lock's place that are not distlock locks
// (Leaks reports those).
//
// cursor is the SCAN cursor as a decimal string and the run id of the
// server that made it (see scan: a restart between or during pages starts
// the listing over, so no lock held throughout is missed). On Redis
// Cluster every master is scanned to the end in one call and next is
// always "".
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	keys, next, err := e.scan(ctx, e.locksPattern(prefix), cursor, limit)
	if err != nil {
		return nil, "", err
	}
	var names, shared []string
	for _, k := range keys {
		if kind, name := e.classify(k); kind == engine.LeakLock {
			names = append(names, name)
		} else if name := e.sharedName(k); name != "" {
			shared = append(shared, name)
		}
	}
	infos, err := e.inspectMany(ctx, names)
	if err != nil {
		return nil, "", err
	}
	more, err := e.inspectSharedMany(ctx, shared)
	if err != nil {
		return nil, "", err
	}
	return append(infos, more...), next, nil
}

// Leaks implements engine.LeakFinder with SCAN (never KEYS) and one
// pipelined TYPE and PTTL per key: keys of any type under the engine's
// prefix (with prefix "") or under the locks whose names start with prefix,
// that have no time to live or one beyond maxTTL (for fencing high-water
// keys and shared locks' state: beyond the engine's fence ttl, when that
// is longer; a force-release's marks, which go when the freed leases
// would have ended, only with no time to live).
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	pattern := e.everyKeyPattern()
	if prefix != "" {
		pattern = e.locksPattern(prefix)
	}
	keys, next, err := e.scan(ctx, pattern, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	if len(keys) == 0 {
		return nil, next, nil
	}
	types := make([]*goredis.StatusCmd, len(keys))
	pttls := make([]*goredis.DurationCmd, len(keys))
	_, err = e.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
			pttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return nil, "", err
	}
	var leaks []engine.Leak
	for i, k := range keys {
		typ, err1 := types[i].Result()
		ttl, err2 := pttls[i].Result()
		if err := errors.Join(err1, err2); err != nil {
			if isReplyError(err) {
				continue
			}
			return nil, "", err
		}
		if typ == "none" || ttl == -2 {
			continue // gone since the scan
		}
		kind, name := e.classify(k)
		bound := maxTTL
		if kind == engine.LeakFence || sharedState(k) {
			bound = max(maxTTL, e.fenceTTL) // these outlive their holders by design
		}
		if ttl >= 0 && (ttl <= bound || takenMark(k)) {
			continue
		}
		if ttl < 0 {
			ttl = -1
		}
		leaks = append(leaks, engine.Leak{Key: k, Name: name, Kind: kind, Type: typ, TTL: ttl})
	}
	return leaks, next, nil
}

// locksPattern is the SCAN MATCH pattern of the keys under the locks whose
// names start with prefix. Glob metacharacters of both prefixes (the
// engine's and prefix) are escaped.
func (e *Engine) locksPattern(prefix string) string {
	return escapeGlob(e.prefix) + "{" + escapeGlob(prefix) + "*"
}

// everyKeyPattern is the SCAN MATCH pattern of every key under the
// engine's prefix, its glob metacharacters escaped.
func (e *Engine) everyKeyPattern() string {
	return escapeGlob(e.prefix) + "*"
}

// sharedState reports whether key is a shared lock's state or holders
// (":s", ":sh"), which expire with the fence ttl after their last use.
func sharedState(key string) bool {
	return strings.HasSuffix(key, "}:s") || strings.HasSuffix(key, "}:sh")
}

// takenMark reports whether key is a name's force-release marks
// (takenKey): it expires when the last lease it tells of would have
// ended, however far off that is, so it is a leak only without a ttl.
func takenMark(key string) bool {
	return strings.HasSuffix(key, "}:t")
}

// classify says whether key is the lock of a name, its fencing high-water,
// or anything else, and the name.
func (e *Engine) classify(key string) (kind, name string) {
	rest, ok := strings.CutPrefix(key, e.prefix+"{")
	if !ok {
		return engine.LeakOther, ""
	}
	if n, ok := strings.CutSuffix(rest, "}:fence"); ok && n != "" {
		return engine.LeakFence, n
	}
	if n, ok := strings.CutSuffix(rest, "}"); ok && n != "" {
		return engine.LeakLock, n
	}
	return engine.LeakOther, ""
}

// scan returns the keys matching pattern from one page of SCAN, starting at
// cursor: it goes on until it has found about limit keys, the iteration
// ended, or maxScanRounds round trips were made. The keys are distinct
// within the page.
func (e *Engine) scan(ctx context.Context, pattern, cursor string, limit int) ([]string, string, error) {
	count := int64(max(limit, minScanCount))
	cur, from, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if cc, ok := e.client.(*goredis.ClusterClient); ok {
		return scanCluster(ctx, cc, pattern, count)
	}
	for range maxListRestarts {
		id, err := runID(ctx, e.client)
		if err != nil {
			return nil, "", err
		}
		if from != "" && from != id {
			cur = 0 // a cursor of a server since restarted: start over
		}
		keys, next, err := scanPage(ctx, e.client, pattern, cur, count, limit)
		if err != nil {
			return nil, "", err
		}
		if after, err := runID(ctx, e.client); err != nil || after != id {
			if err != nil {
				return nil, "", err
			}
			cur, from = 0, after // restarted while this page was read: start over
			continue
		}
		if next == 0 {
			return keys, "", nil
		}
		return keys, strconv.FormatUint(next, 10) + "@" + id, nil
	}
	return nil, "", errRestarting
}

// A SCAN cursor is good only on the server process that made it: a
// restarted server (and another one after a failover) hashes the keys with
// a seed of its own, so an old cursor would go on at a place that skips
// some of them. List's cursor therefore carries the server's run id
// ("<scan cursor>@<run id>"); a page read on a server whose run id is not
// the cursor's, or that changed while the page was read, starts the
// listing over from the start (names listed already come again, which
// callers deduplicate, and none held throughout is missed).
const maxListRestarts = 3

// errRestarting: the server restarted during every one of maxListRestarts
// tries of one page.
var errRestarting = errors.New("list: the Redis server restarted while each try of the page was read")

// parseCursor splits List's cursor into the SCAN cursor and the run id of
// the server that made it ("" in the first page's cursor, and in a bare
// SCAN cursor). A cursor that is neither is refused with an
// *engine.ArgumentError (Arg "cursor"), before any round trip.
func parseCursor(cursor string) (cur uint64, runID string, err error) {
	if cursor == "" {
		return 0, "", nil
	}
	c, id, _ := strings.Cut(cursor, "@")
	if cur, err = strconv.ParseUint(c, 10, 64); err != nil {
		return 0, "", &engine.ArgumentError{Arg: "cursor", Reason: "not a cursor of this listing: " + strconv.Quote(cursor)}
	}
	return cur, id, nil
}

// runID is the run id of the server c talks to (INFO server): a new one on
// every start.
func runID(ctx context.Context, c goredis.Cmdable) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(id), nil
		}
	}
	return "", errors.New("list: INFO server has no run_id")
}

// scanPage reads keys matching pattern from cur on, in at most
// maxScanRounds SCAN round trips, until about limit were found or the
// scan ended (next 0).
func scanPage(ctx context.Context, c goredis.Cmdable, pattern string, cur uint64, count int64, limit int) (keys []string, next uint64, err error) {
	seen := make(map[string]struct{})
	for range maxScanRounds {
		page, n, err := c.Scan(ctx, cur, pattern, count).Result()
		if err != nil {
			return nil, 0, err
		}
		for _, k := range page {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
		cur = n
		if cur == 0 || len(keys) >= limit {
			break
		}
	}
	return keys, cur, nil
}

// scanCluster scans every master of a cluster to the end, concurrently.
func scanCluster(ctx context.Context, cc *goredis.ClusterClient, pattern string, count int64) ([]string, string, error) {
	var (
		mu   sync.Mutex
		seen = make(map[string]struct{})
		keys []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		// Each master to its end, read again from the start when it
		// restarted meanwhile (its cursor would skip keys: see scan).
		for range maxListRestarts {
			id, err := runID(ctx, c)
			if err != nil {
				return err
			}
			it := c.Scan(ctx, 0, pattern, count).Iterator()
			for it.Next(ctx) {
				mu.Lock()
				if _, dup := seen[it.Val()]; !dup {
					seen[it.Val()] = struct{}{}
					keys = append(keys, it.Val())
				}
				mu.Unlock()
			}
			if err := it.Err(); err != nil {
				return err
			}
			if after, err := runID(ctx, c); err != nil || after == id {
				return err
			}
		}
		return errRestarting
	})
	if err != nil {
		return nil, "", err
	}
	return keys, "", nil
}

// inspectMany reads the Info of each named lock in one pipelined round trip
// and keeps the ones that are held distlock locks.
func (e *Engine) inspectMany(ctx context.Context, names []string) ([]engine.Info, error) {
	if len(names) == 0 {
		return nil, nil
	}
	rs := make([]lockReads, len(names))
	_, err := e.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, name := range names {
			rs[i] = e.readLock(ctx, p, name)
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return nil, err
	}
	infos := make([]engine.Info, 0, len(names))
	for i, name := range names {
		info, held, err := rs[i].info(e, name)
		if isReplyError(err) || errors.Is(err, errNotALock) {
			continue // not a distlock lock
		}
		if err != nil {
			return nil, err
		}
		if !held {
			continue // released since the scan
		}
		if err := e.countClassicSubscribers(ctx, &info); err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// isReplyError reports whether err is the server's answer to one command
// (WRONGTYPE, a nil reply...) rather than a failed round trip.
func isReplyError(err error) bool {
	var re goredis.Error
	return errors.As(err, &re)
}

// escapeGlob escapes the metacharacters of Redis glob patterns (* ? [ ] \)
// so that s matches itself only in SCAN MATCH.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
