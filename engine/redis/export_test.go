package redis

// Queued returns the number of Acquire and Release calls of e waiting for a
// pipeline, for the tests of package redis_test.
func Queued(e *Engine) int {
	b := e.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.queue {
		if c.state == queued {
			n++
		}
	}
	return n
}

// AcquireSource is the acquire script's text as the engine sends it, for
// the tests that run a mutant of it.
func AcquireSource() string { return acquireScript.Source() }

// Channel returns the pub/sub channel of the lock name, where the tests
// publish forged (stale, duplicated) election messages.
func Channel(e *Engine, name string) string { return e.channel(name) }
