package zookeeper

// The engine remembers the children it created or saw its owners hold, to
// spare a listing; every decision still reads the line from ZooKeeper.

func (e *Engine) waiter(k key) (waitNode, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w, ok := e.waiting[k]
	return w, ok
}

func (e *Engine) setWaiter(k key, w waitNode) {
	if k.id == "" {
		return
	}
	e.mu.Lock()
	e.waiting[k] = w
	e.mu.Unlock()
}

func (e *Engine) dropWaiter(k key) {
	e.mu.Lock()
	delete(e.waiting, k)
	e.mu.Unlock()
}

func (e *Engine) holding(k key) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held[k]
}

func (e *Engine) setHolding(k key, path string) {
	e.mu.Lock()
	e.held[k] = path
	e.mu.Unlock()
}

func (e *Engine) dropHolding(k key) {
	e.mu.Lock()
	delete(e.held, k)
	e.mu.Unlock()
}
