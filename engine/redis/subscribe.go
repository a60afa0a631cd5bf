package redis

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// linger is how long the subscription connection stays open after its last
// waiter left, so that bursts of waits do not reconnect every time.
const linger = 2 * time.Second

// idlePing is how long the reader waits for a message before it pings the
// server, so that a dead connection is noticed and re-established.
const idlePing = 15 * time.Second

// watcher multiplexes every waiter of one Engine onto one pub/sub connection,
// subscribing each channel once (reference-counted).
type watcher struct {
	e       *Engine
	mu      sync.Mutex
	ps      *goredis.PubSub // nil while nobody waits (after linger)
	chans   map[string]*channelState
	timer   *time.Timer // closes ps after linger
	closed  bool
	readers sync.WaitGroup
}

// channelState is one subscribed channel and the waiters on it.
type channelState struct {
	members   map[*subscription]struct{}
	ready     chan struct{} // closed on the server's confirmation
	confirmed bool
}

// subscription is one waiter's handle.
type subscription struct {
	w    *watcher
	ch   string
	c    chan struct{}
	once sync.Once
}

func newWatcher(e *Engine) *watcher {
	return &watcher{e: e, chans: make(map[string]*channelState)}
}

func (s *subscription) C() <-chan struct{} { return s.c }

func (s *subscription) Close() { s.once.Do(func() { s.w.leave(s) }) }

func (s *subscription) wake() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Subscribe implements engine.Engine. It returns once the server confirmed
// the subscription, so no release after it can be missed.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.watch.join(ctx, e.channel(name))
}

func (w *watcher) join(ctx context.Context, ch string) (engine.Subscription, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, engine.ErrClosed
	}
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.ps == nil {
		w.ps = w.e.client.Subscribe(context.WithoutCancel(ctx))
		w.readers.Add(1)
		go w.read(w.ps)
	}
	s := &subscription{w: w, ch: ch, c: make(chan struct{}, 1)}
	st := w.chans[ch]
	if st == nil {
		st = &channelState{members: make(map[*subscription]struct{}), ready: make(chan struct{})}
		w.chans[ch] = st
		// Sent under w.mu so SUBSCRIBE and UNSUBSCRIBE of one channel
		// reach the server in the order of the reference count.
		if err := w.ps.Subscribe(ctx, ch); err != nil {
			delete(w.chans, ch)
			w.idle()
			w.mu.Unlock()
			return nil, err
		}
	}
	st.members[s] = struct{}{}
	w.mu.Unlock()

	select {
	case <-st.ready:
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

func (w *watcher) leave(s *subscription) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.chans[s.ch]
	if st == nil {
		return
	}
	delete(st.members, s)
	if len(st.members) > 0 {
		return
	}
	delete(w.chans, s.ch)
	if w.ps != nil && !w.closed {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = w.ps.Unsubscribe(ctx, s.ch)
		cancel()
	}
	w.idle()
}

// idle arms the linger timer when no channel is subscribed; w.mu is held.
func (w *watcher) idle() {
	if len(w.chans) > 0 || w.ps == nil || w.closed {
		return
	}
	ps := w.ps
	w.timer = time.AfterFunc(linger, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.ps == ps && len(w.chans) == 0 {
			w.ps = nil
			w.timer = nil
			_ = ps.Close()
		}
	})
}

// read delivers the server's pub/sub messages to the waiters until ps is
// closed.
func (w *watcher) read(ps *goredis.PubSub) {
	defer w.readers.Done()
	ctx := context.Background()
	failures := 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, idlePing)
		if w.gone(ps) {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				_ = ps.Ping(pctx)
				cancel()
				continue
			}
			// The connection broke: go-redis reconnects and subscribes
			// again on the next receive. Messages may have been lost, so
			// every waiter re-checks.
			w.wakeAll()
			failures++
			time.Sleep(backoff(failures))
			continue
		}
		failures = 0
		switch m := msg.(type) {
		case *goredis.Message:
			w.wakeChannel(m.Channel, false)
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				w.wakeChannel(m.Channel, true)
			}
		}
	}
}

// wakeChannel wakes the waiters of ch. A subscribe confirmation readies a new
// channel, or, for one already confirmed (a resubscription after a
// reconnect), makes its waiters re-check.
func (w *watcher) wakeChannel(ch string, confirmation bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.chans[ch]
	if st == nil {
		return
	}
	if confirmation && !st.confirmed {
		st.confirmed = true
		close(st.ready)
		return
	}
	for s := range st.members {
		s.wake()
	}
}

func (w *watcher) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.chans {
		for s := range st.members {
			s.wake()
		}
	}
}

// gone reports whether ps is no longer the watcher's connection.
func (w *watcher) gone(ps *goredis.PubSub) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed || w.ps != ps
}

// close ends the subscription connection and waits for its reader.
func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	ps := w.ps
	w.ps = nil
	for _, st := range w.chans {
		for s := range st.members {
			s.wake()
		}
	}
	w.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	w.readers.Wait()
}

// backoff is the jittered pause after the n-th consecutive connection error.
func backoff(n int) time.Duration {
	d := 10 * time.Millisecond << min(n, 5)
	return d/2 + rand.N(d/2+1)
}
