package memory

import (
	"context"

	"github.com/distlock/distlock/engine"
)

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
	if err := engine.CheckLatchCount(count); err != nil {
		return false, err
	}
	r := e.record(name)
	if r.latch != nil {
		return false, nil
	}
	r.latch = &latch{count: count}
	return true, nil
}

// CountDown implements engine.Latcher.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	r := e.of(name)
	if r == nil || r.latch == nil {
		return 0, nil
	}
	l := r.latch
	switch {
	case id != "" && id == l.lastID:
		return l.count, nil // a resent copy
	}
	l.count--
	l.lastID = id
	if l.count == 0 {
		r.latch = nil
		e.tidy(name, r)
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
	if r := e.of(name); r != nil && r.latch != nil {
		return r.latch.count, nil
	}
	return 0, nil
}
