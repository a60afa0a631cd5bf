package memory

import "context"

// latch is a countdown latch's record (engine.Latcher).
type latch struct {
	count  int64
	lastID string // the last CountDown's id
}

// SetCount implements engine.Latcher.
func (e *Engine) SetCount(ctx context.Context, name string, count int64) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return false, err
	}
	if e.latches[name] != nil {
		return false, nil
	}
	if e.latches == nil {
		e.latches = make(map[string]*latch)
	}
	e.latches[name] = &latch{count: count}
	return true, nil
}

// CountDown implements engine.Latcher.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	l := e.latches[name]
	switch {
	case l == nil:
		return 0, nil
	case id != "" && id == l.lastID:
		return l.count, nil // a resent copy
	}
	l.count--
	l.lastID = id
	if l.count == 0 {
		delete(e.latches, name)
		e.notifyWaiter(name, "")
	}
	return l.count, nil
}

// Count implements engine.Latcher.
func (e *Engine) Count(ctx context.Context, name string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	if l := e.latches[name]; l != nil {
		return l.count, nil
	}
	return 0, nil
}
