package zookeeper

import "time"

// The client library's calls take no context, so each runs on a goroutine
// other than its caller's, which returns when the call answers or its
// context ends (do, runProtected). Those goroutines are kept
// (internal/workpool): a worker that finished a call takes the next one,
// and ends once it has waited workerIdle for one, or when the engine
// closes (Close waits for it). A goroutine started per call cost its start
// and a stack grown again on every call: about 4 % of an uncontended
// acquire+release on one member.

// workerIdle is how long a worker waits for a call before it ends.
const workerIdle = 5 * time.Second

// run runs f on a worker: an idle one, or a new one. It returns false,
// and f does not run, when the engine is closed.
func (e *Engine) run(f func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.workers.Run(f)
	return true
}
