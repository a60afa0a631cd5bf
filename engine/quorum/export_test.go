package quorum

// CleanupsPending counts the releases e's background cleaners still hold,
// on every node.
func CleanupsPending(e *Engine) int {
	n := 0
	for _, c := range e.cleaners {
		c.mu.Lock()
		n += len(c.pending)
		c.mu.Unlock()
	}
	return n
}
