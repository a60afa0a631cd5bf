// Package expiring is a map whose entries are forgotten after their own
// ttl, with a bound on its size: what a component remembers for a while
// about calls that ended (the waiters that left a quorum, the held-open
// waits a server answered with a grant), for the late messages that refer
// to them.
package expiring

import (
	"sync"
	"time"
)

// pruneEvery is how often a Put looks for entries past their ttl (also
// whenever the map is full).
const pruneEvery = time.Minute

// Map maps K to V for a while; safe for concurrent use. Make one with New.
type Map[K comparable, V any] struct {
	max int

	mu     sync.Mutex
	m      map[K]entry[V]
	pruned time.Time
}

type entry[V any] struct {
	v     V
	until time.Time
}

// New returns an empty Map that keeps at most max live entries (max > 0).
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{max: max, m: make(map[K]entry[V]), pruned: time.Now()}
}

// Put remembers v under k for ttl, replacing what k had. It reports false,
// keeping nothing, when max entries are live and k is not one of them.
func (m *Map[K, V]) Put(k K, v V, ttl time.Duration) bool {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	_, had := m.m[k]
	if !had && (len(m.m) >= m.max || now.Sub(m.pruned) >= pruneEvery) {
		for key, e := range m.m {
			if !now.Before(e.until) {
				delete(m.m, key)
			}
		}
		m.pruned = now
	}
	if !had && len(m.m) >= m.max {
		return false
	}
	m.m[k] = entry[V]{v, now.Add(ttl)}
	return true
}

// Get returns k's value while it is remembered.
func (m *Map[K, V]) Get(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live(k)
}

// Take returns k's value while it is remembered, and forgets it.
func (m *Map[K, V]) Take(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.live(k)
	delete(m.m, k)
	return v, ok
}

// live is Get's lookup; m.mu is held.
func (m *Map[K, V]) live(k K) (V, bool) {
	e, ok := m.m[k]
	if !ok || !time.Now().Before(e.until) {
		var zero V
		return zero, false
	}
	return e.v, true
}
