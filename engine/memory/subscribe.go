package memory

import (
	"context"
	"sync"

	"github.com/distlock/distlock/engine"
)

// subscription is one waiter's interest in one name.
type subscription struct {
	e      *Engine
	name   string
	waiter string // "" for a plain Subscribe: woken by every release
	engine.Signal
	engine.NoticeBox // the states its wake-ups carried (engine/notice.go)
	once             sync.Once
}

// wake wakes s without a notice: its observer reads the lock.
func (s *subscription) wake() {
	s.Doubt()
	s.Wake()
}

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
	return e.SubscribeWaiter(ctx, name, "")
}

// SubscribeWaiter implements engine.Queuer.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	s := &subscription{e: e, name: name, waiter: waiter, Signal: engine.NewSignal()}
	set := e.subs[name]
	if set == nil {
		set = make(map[*subscription]struct{})
		e.subs[name] = set
	}
	set[s] = struct{}{}
	return s, nil
}

// notify wakes every subscriber of name (the engine closes); the caller
// holds e.mu.
func (e *Engine) notify(name string) {
	for s := range e.subs[name] {
		s.wake()
	}
}

// notifyWaiter wakes the subscriptions of one waiter; the caller holds e.mu.
func (e *Engine) notifyWaiter(name, waiter string) {
	for s := range e.subs[name] {
		if s.waiter == waiter {
			s.wake()
		}
	}
}

// announce wakes the plain subscribers of name (an election's observers)
// with the holder's state l: a new leader or value, which they report
// without reading the lock. The caller holds e.mu.
func (e *Engine) announce(name string, l *lock) {
	n := engine.Notice{Held: true, Token: l.token, Metadata: l.metadata, TTL: l.expires.Sub(e.now())}
	for s := range e.subs[name] {
		if s.waiter != "" {
			continue
		}
		if n.Metadata == "" {
			s.wake() // no value: nobody leads, as a read would say
			continue
		}
		s.Put(n)
		s.Wake()
	}
}

// freed wakes the waiters of a lock that was just freed: the head of its
// queue (reserving the lock for it when due), and every plain subscriber,
// which waits outside the queue. The caller holds e.mu.
func (e *Engine) freed(name string) {
	now := e.now()
	e.wakeHead(name, e.settle(name, now), now, true)
	e.notifyWaiter(name, "")
}
