package memory

import (
	"context"
	"sync"

	"github.com/distlock/distlock/engine"
)

// subscription is one waiter's interest in one name.
type subscription struct {
	e    *Engine
	name string
	c    chan struct{}
	once sync.Once
}

func (s *subscription) C() <-chan struct{} { return s.c }

func (s *subscription) Close() {
	s.once.Do(func() {
		s.e.mu.Lock()
		defer s.e.mu.Unlock()
		set := s.e.subs[s.name]
		delete(set, s)
		if len(set) == 0 {
			delete(s.e.subs, s.name)
		}
	})
}

// Subscribe implements engine.Engine.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	s := &subscription{e: e, name: name, c: make(chan struct{}, 1)}
	set := e.subs[name]
	if set == nil {
		set = make(map[*subscription]struct{})
		e.subs[name] = set
	}
	set[s] = struct{}{}
	return s, nil
}

// notify wakes every subscriber of name; the caller holds e.mu.
func (e *Engine) notify(name string) {
	for s := range e.subs[name] {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}
}
