package engine

import (
	"context"
	"sync"
	"time"
)

// Watcher is an engine's subscription transport as a Hub drives it: it
// starts and stops the delivery of one name's events (a channel
// subscribed, a watch set) and feeds them to the Hub (Wake, WakeWaiter,
// WakeIf, Notice, WakeAll), which it may call at any time.
//
// The Hub calls Watch before it returns the first subscription of a name,
// and Unwatch once the name's last subscription left and the Hub's linger
// passed without a new one; never both at once for one name, and never
// while it holds its own lock.
type Watcher interface {
	// Watch starts delivering name's events and returns once a change
	// made after it returns will be delivered. On an error nothing is
	// left watched.
	Watch(ctx context.Context, name string) error
	// Unwatch stops delivering name's events.
	Unwatch(name string)
}

// Hub keeps the subscriptions of one engine: the subscribers of each name,
// their coalescing wake-ups and notices, and which names its Watcher must
// watch. Names are the engine's own keys (a lock's name, or a channel).
// The zero Hub is not usable; see NewHub.
type Hub struct {
	w      Watcher // nil: nothing to watch (the events are local)
	linger time.Duration

	mu      sync.Mutex
	names   map[string]*hubName
	leaving map[string]chan struct{} // names whose Unwatch runs; closed after it
	closed  bool
	unwatch sync.WaitGroup // Unwatch calls in flight
}

// hubName is one watched name and its subscribers.
type hubName struct {
	subs  map[*hubSub]struct{}
	ready chan struct{} // closed once Watch returned, with err set
	err   error
	idle  *time.Timer // unwatches after the linger once subs is empty
}

// hubSub is a Subscription (and Noticer) of a Hub.
type hubSub struct {
	h      *Hub
	name   string
	waiter string // a queue's waiter id; "" for a plain subscription
	n      *hubName
	Signal
	NoticeBox
	once sync.Once
}

// NewHub returns a Hub that watches names with w (nil when the engine's
// events need no transport) and unwatches a name linger after its last
// subscription left (at once when linger is 0), so that a Client that
// waits for the name again soon finds it watched.
func NewHub(w Watcher, linger time.Duration) *Hub {
	return &Hub{w: w, linger: linger, names: make(map[string]*hubName), leaving: make(map[string]chan struct{})}
}

// Subscribe returns a subscription to name's wake-ups for waiter ("" for
// a plain subscription: Engine.Subscribe; otherwise Queuer.SubscribeWaiter).
// When it returns, the name is watched: a change after it is delivered.
// After Close it fails with ErrClosed.
func (h *Hub) Subscribe(ctx context.Context, name, waiter string) (Subscription, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrClosed
		}
		if done := h.leaving[name]; done != nil {
			h.mu.Unlock()
			select { // its Unwatch first: they reach the transport in order
			case <-done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		n := h.names[name]
		first := n == nil
		if first {
			n = &hubName{subs: make(map[*hubSub]struct{}), ready: make(chan struct{})}
			h.names[name] = n
		}
		if n.idle != nil {
			n.idle.Stop() // lingering: a subscriber again
			n.idle = nil
		}
		s := &hubSub{h: h, name: name, waiter: waiter, n: n, Signal: NewSignal()}
		n.subs[s] = struct{}{}
		h.mu.Unlock()
		if first {
			return s, h.watch(ctx, s)
		}
		select {
		case <-n.ready:
			if n.err == nil {
				return s, nil
			}
			// The first subscriber's Watch failed (its context may have
			// ended): this one tries again.
		case <-ctx.Done():
			s.Close()
			return nil, ctx.Err()
		}
	}
}

// watch has the Watcher watch s's name, s being its first subscriber, and
// readies the name for the others.
func (h *Hub) watch(ctx context.Context, s *hubSub) error {
	var err error
	if h.w != nil {
		err = h.w.Watch(ctx, s.name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil && h.closed {
		err = ErrClosed // the transport's Close ends its watches
	}
	n := s.n
	n.err = err
	if err != nil && h.names[s.name] == n {
		delete(h.names, s.name)
	}
	close(n.ready)
	return err
}

// Close implements Subscription.
func (s *hubSub) Close() { s.once.Do(s.h.leave(s)) }

// leave returns the leaving of s: the name is unwatched (after the linger)
// once it was its last subscriber.
func (h *Hub) leave(s *hubSub) func() {
	return func() {
		h.mu.Lock()
		n := s.n
		delete(n.subs, s)
		if len(n.subs) > 0 || h.closed || h.names[s.name] != n || n.idle != nil || n.err != nil {
			h.mu.Unlock()
			return
		}
		if h.linger > 0 {
			var t *time.Timer
			t = time.AfterFunc(h.linger, func() {
				h.mu.Lock()
				if n.idle != t { // stopped too late: a subscriber came since
					h.mu.Unlock()
					return
				}
				h.drop(s.name, n) // unlocks
			})
			n.idle = t
			h.mu.Unlock()
			return
		}
		h.drop(s.name, n)
	}
}

// drop unwatches name, whose state is n, if it still has no subscriber;
// h.mu is held, and drop unlocks it.
func (h *Hub) drop(name string, n *hubName) {
	if h.closed || h.names[name] != n || len(n.subs) > 0 {
		h.mu.Unlock()
		return
	}
	n.idle = nil
	delete(h.names, name)
	if h.w == nil {
		h.mu.Unlock()
		return
	}
	done := make(chan struct{})
	h.leaving[name] = done
	h.unwatch.Add(1)
	h.mu.Unlock()
	defer h.unwatch.Done()
	h.w.Unwatch(name)
	h.mu.Lock()
	delete(h.leaving, name)
	close(done)
	h.mu.Unlock()
}

// Close wakes every subscription (waiters re-check, and find the engine
// closed), stops the lingering and waits for the Unwatch calls in flight;
// it calls no Unwatch itself: the engine's transport ends its watches as
// it closes. Later Subscribe calls fail with ErrClosed. It is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	for _, n := range h.names {
		if n.idle != nil {
			n.idle.Stop()
			n.idle = nil
		}
		for s := range n.subs {
			s.wake()
		}
	}
	h.mu.Unlock()
	h.unwatch.Wait()
}
