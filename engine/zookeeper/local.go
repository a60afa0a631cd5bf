package zookeeper

import "time"

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
	defer e.mu.Unlock()
	if e.waiting[k].path != w.path {
		if ch, ok := e.placed[k]; ok {
			close(ch)
			delete(e.placed, k)
		}
	}
	e.waiting[k] = w
}

// wroteWaiter records that the waiter k's child at path was written by a
// request sent at sent (see waitNode.wrote).
func (e *Engine) wroteWaiter(k key, path string, sent time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w, ok := e.waiting[k]; ok && w.path == path && sent.After(w.wrote) {
		w.wrote = sent
		e.waiting[k] = w
	}
}

// placeSignal returns a channel closed when the waiter k takes a new
// place in line.
func (e *Engine) placeSignal(k key) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.placed[k]
	if !ok {
		ch = make(chan struct{})
		e.placed[k] = ch
	}
	return ch
}

// dropWaiter forgets the waiter's place (and ends its place signal: a
// subscription sets its watches again).
func (e *Engine) dropWaiter(k key) {
	e.mu.Lock()
	delete(e.waiting, k)
	delete(e.heads, k)
	if ch, ok := e.placed[k]; ok {
		close(ch)
		delete(e.placed, k)
	}
	e.mu.Unlock()
}

// holding returns the held child this engine last wrote for k (its data
// and stat as written), if any.
func (e *Engine) holding(k key) (child, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.held[k]
	return c, ok
}

func (e *Engine) setHolding(k key, c child) {
	e.mu.Lock()
	e.held[k] = c
	e.mu.Unlock()
}

func (e *Engine) dropHolding(k key) {
	e.mu.Lock()
	delete(e.held, k)
	e.mu.Unlock()
}

// headHint is what a waiter's watch saw as the head of the line: its
// place, and the name node's version when that version's event was a
// release (see handOff).
type headHint struct {
	place   string
	version int32
}

// setHead records what the waiter k's watch saw as the head of the line
// with its place at own (a hint only a release's event makes).
func (e *Engine) setHead(k key, own string, seen nameSeen) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !seen.released {
		delete(e.heads, k)
		return
	}
	e.heads[k] = headHint{place: own, version: seen.version}
}

// takeHead returns and forgets the waiter k's head hint.
func (e *Engine) takeHead(k key) (headHint, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.heads[k]
	delete(e.heads, k)
	return h, ok
}
