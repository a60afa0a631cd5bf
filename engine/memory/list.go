package memory

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
)

var (
	_ engine.Lister     = (*Engine)(nil)
	_ engine.LeakFinder = (*Engine)(nil)
)

// List implements engine.Lister: the held locks whose names start with
// prefix, mutexes and shared locks (held, or waited for) alike, in name
// order, at most limit (at least 1) per page. The cursor is the last name
// of the previous page. Each page is read in one critical section.
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return nil, "", err
	}
	now := e.now()
	var names []string
	shared := make(map[string]bool)
	for name := range e.names {
		if !strings.HasPrefix(name, prefix) || name <= cursor {
			continue
		}
		switch {
		case e.sharedListed(name, now):
			names = append(names, name)
			shared[name] = true
		case e.live(name, now) != nil:
			names = append(names, name)
		}
	}
	sort.Strings(names)
	next := ""
	if limit < 1 {
		limit = 1
	}
	if len(names) > limit {
		names = names[:limit]
		next = names[limit-1]
	}
	infos := make([]engine.Info, 0, len(names))
	for _, name := range names {
		if shared[name] {
			infos = append(infos, e.sharedInfo(name, e.of(name).shared, now))
			continue
		}
		infos = append(infos, e.info(name, now))
	}
	return infos, next, nil
}

// sharedListed reports whether name is listed as a shared lock: held as
// one, or waited for while no mutex holds the name (a mutex granted while
// a shared lock's waiters wait, which refuse no mutex, is the name's
// holder and listed as the mutex); the caller holds e.mu.
func (e *Engine) sharedListed(name string, now time.Time) bool {
	s := e.sharedState(name, now)
	return s != nil && (len(s.holders) > 0 || s.q != nil && e.live(name, now) == nil)
}

// Leaks implements engine.LeakFinder. The embedded engine gives every lock
// the time to live it was asked for and remembers high-water marks for a
// fixed time, so its only possible leaks are locks granted with a time to
// live beyond maxTTL (shared locks' holders are in the listing, List). Key
// and Name are the lock name; Type is "lock".
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	infos, next, err := e.List(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	var leaks []engine.Leak
	for _, info := range infos {
		if info.Kind != 0 {
			continue // its holders are listed (List), and none outlives its lease
		}
		if info.TTL > maxTTL {
			leaks = append(leaks, engine.Leak{Key: info.Name, Name: info.Name, Kind: engine.LeakLock, Type: "lock", TTL: info.TTL})
		}
	}
	return leaks, next, nil
}

// info describes the lock name at now (Inspect, List): Waiters are the
// live queue entries, Subscribers every subscription; the caller holds
// e.mu.
func (e *Engine) info(name string, now time.Time) engine.Info {
	info := engine.Info{Name: name, Subscribers: e.hub.Count(name)}
	info.Waiters, info.Queue = e.liveQueue(name, now)
	info.HighWater = e.highWater(name, now)
	if l := e.live(name, now); l != nil {
		info.Held = true
		info.Owner, info.Count, info.Metadata, info.Token = l.owner, l.count, l.metadata, l.token
		info.TTL = l.expires.Sub(now)
	}
	return info
}
