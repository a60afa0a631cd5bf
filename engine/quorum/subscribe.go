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

// subscribe makes a subscription on every node with sub and merges them. It
// returns once every node answered or a majority subscribed (within ten
// per-node timeouts: a subscription may dial a connection first); a node
// that answers later joins the merged subscription then, or is closed if
// it came too late.
func (e *Engine) subscribe(ctx context.Context, sub func(ctx context.Context, n node) (engine.Subscription, error)) (engine.Subscription, error) {
	m := &merged{Signal: engine.NewSignal(), stop: make(chan struct{})}
	ready := func(rs []result[engine.Subscription], _ int) bool {
		ok := 0
		for _, x := range rs {
			if x.done && x.err == nil {
				ok++
			}
		}
		return ok >= e.majority
	}
	late := func(_ int, x result[engine.Subscription]) {
		if x.err == nil {
			m.add(x.v)
		}
	}
	rs := each(ctx, e, e.timeout(0)*10, sub, ready, late)
	var subs []engine.Subscription
	for _, x := range rs {
		if x.done && x.err == nil {
			subs = append(subs, x.v)
		}
	}
	if len(subs) == 0 {
		m.Close() // a straggler that answers later is closed
		return nil, errors.Join(nodeErrs(rs)...)
	}
	for _, s := range subs {
		m.add(s)
	}
	return m, nil
}

// merged fans the wake-ups of several node subscriptions into one channel.
type merged struct {
	engine.Signal
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup

	mu     sync.Mutex
	subs   []engine.Subscription
	closed bool
}

// add forwards s's wake-ups, or closes s when m is closed already.
func (m *merged) add(s engine.Subscription) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		s.Close()
		return
	}
	m.subs = append(m.subs, s)
	m.wg.Add(1)
	go m.forward(s)
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
		m.mu.Lock()
		m.closed = true
		subs := m.subs
		m.mu.Unlock()
		close(m.stop)
		m.wg.Wait()
		for _, s := range subs {
			s.Close()
		}
	})
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
