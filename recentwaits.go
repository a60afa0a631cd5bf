package distlock

import (
	"sync"
	"time"
)

// recentWaitWindow is how long after a wait for a name this Client's next
// waiting Acquire of it skips the plain first attempt and enters the wait
// loop at once: a name handed round among processes is refused almost
// always, and its first attempt would cost a round trip (and the
// engine's work of a refusal) before the one that queues. It is shorter
// than the time engines keep a channel subscribed after its last waiter
// left (engine/redis: 2s), so the wait loop's subscription is usually
// there already. A grant is granted all the same by the loop's first
// attempt when the lock is free.
const recentWaitWindow = time.Second

// recentWaits remembers when this Client last waited for each name, for
// recentWaitWindow. Entries older than that are pruned when the map has
// doubled since the last pruning, so it holds about the names waited for
// within the window.
type recentWaits struct {
	mu     sync.Mutex
	at     map[string]time.Time
	pruned int // len(at) after the last pruning
}

// note records a wait for name that ended at now.
func (r *recentWaits) note(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = make(map[string]time.Time)
	}
	r.at[name] = now
	if len(r.at) > 2*max(r.pruned, 64) {
		for n, t := range r.at {
			if now.Sub(t) >= recentWaitWindow {
				delete(r.at, n)
			}
		}
		r.pruned = len(r.at)
	}
}

// recent reports whether a wait for name ended within recentWaitWindow
// before now.
func (r *recentWaits) recent(name string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.at[name]
	return ok && now.Sub(t) < recentWaitWindow
}
