package quorum

import (
	"context"
	"errors"
	"sync"

	"github.com/distlock/distlock/engine"
)

// Subscribe implements engine.Engine: it subscribes on every node and wakes
// on a release at any of them (a release on one node may free the majority).
// It succeeds when at least one node's subscription is ready; the waiter's
// ttl-bounded waits cover the nodes that are down.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.subscribe(ctx, func(ctx context.Context, n node) (engine.Subscription, error) {
		return n.eng.Subscribe(ctx, name)
	})
}

// subscribe makes a subscription on every node with sub and merges them.
func (e *Engine) subscribe(ctx context.Context, sub func(ctx context.Context, n node) (engine.Subscription, error)) (engine.Subscription, error) {
	rs := each(ctx, e, e.timeout(0)*10, sub, nil, nil)
	m := &merged{Signal: engine.NewSignal(), stop: make(chan struct{})}
	for _, x := range rs {
		if x.err == nil {
			m.subs = append(m.subs, x.v)
		}
	}
	if len(m.subs) == 0 {
		return nil, errors.Join(nodeErrs(rs)...)
	}
	for _, s := range m.subs {
		m.wg.Add(1)
		go m.forward(s)
	}
	return m, nil
}

// merged fans the wake-ups of several node subscriptions into one channel.
type merged struct {
	subs []engine.Subscription
	engine.Signal
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func (m *merged) forward(s engine.Subscription) {
	defer m.wg.Done()
	for {
		select {
		case <-s.C():
			m.Wake()
		case <-m.stop:
			return
		}
	}
}

// Close ends every node subscription and the forwarding goroutines.
func (m *merged) Close() {
	m.once.Do(func() {
		close(m.stop)
		m.wg.Wait()
		for _, s := range m.subs {
			s.Close()
		}
	})
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
