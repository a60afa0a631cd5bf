package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/engine"
)

// Listener timing.
const (
	// idlePing is how long the listener waits for a notification before it
	// pings the server, so that a dead connection is noticed.
	idlePing = 10 * time.Second
	// connectTimeout bounds one attempt to (re)connect and LISTEN.
	connectTimeout = 5 * time.Second
	// retryMin and retryMax bound the jittered pause between reconnection
	// attempts; every local waiter re-checks at each one (bounded polling
	// while notifications cannot arrive).
	retryMin, retryMax = 20 * time.Millisecond, time.Second
)

// listener is the engine's one listening connection: it LISTENs on the
// schema's channel and wakes the subscriptions a notification is for. It
// starts with the first subscription and runs until the engine is closed.
type listener struct {
	e    *Engine
	conf *pgx.ConnConfig // nil: a connection hijacked from the pool
	ch   string          // the schema's channel: every engine's messages
	own  string          // this engine's channel: its waiters' wake-ups

	mu      sync.Mutex
	subs    map[string]map[*subscription]struct{} // by nameKey
	ready   chan struct{}                         // closed while listening
	started bool
	closed  bool
	stop    chan struct{} // closed by close
	cancel  context.CancelFunc
	done    chan struct{}
}

// subscription is one waiter's (or plain subscriber's) interest in a name.
type subscription struct {
	l      *listener
	key    string
	waiter string // "" for a plain Subscribe
	engine.Signal
	once sync.Once
}

func newListener(e *Engine, conf *pgx.ConnConfig) *listener {
	return &listener{e: e, conf: conf, ch: channel(e.schema), own: ownChannel(e.schema),
		subs: make(map[string]map[*subscription]struct{}), ready: make(chan struct{}), stop: make(chan struct{})}
}

// Close implements engine.Subscription.
func (s *subscription) Close() { s.once.Do(func() { s.l.leave(s) }) }

// Subscribe implements engine.Engine. It returns once the listening
// connection LISTENs, so no release after it can be missed.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.SubscribeWaiter(ctx, name, "")
}

// SubscribeWaiter implements engine.Queuer: the subscription is woken by
// wake-ups addressed to waiter, by those for everyone on the name
// (released, announced, proclaimed), and whenever the listening connection
// was lost (notifications are not replayed: the waiter must re-check).
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if e.listen == nil {
		return nil, ErrNoListen
	}
	return e.listen.join(ctx, nameKey(name), waiter)
}

func (l *listener) join(ctx context.Context, key, waiter string) (engine.Subscription, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, engine.ErrClosed
	}
	if !l.started {
		l.started = true
		var rctx context.Context
		rctx, l.cancel = context.WithCancel(context.Background())
		l.done = make(chan struct{})
		go l.run(rctx)
	}
	s := &subscription{l: l, key: key, waiter: waiter, Signal: engine.NewSignal()}
	set := l.subs[key]
	if set == nil {
		set = make(map[*subscription]struct{})
		l.subs[key] = set
	}
	set[s] = struct{}{}
	ready := l.ready
	l.mu.Unlock()
	select {
	case <-ready:
		return s, nil
	case <-l.stop:
		s.Close()
		return nil, engine.ErrClosed
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

func (l *listener) leave(s *subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.subs[s.key]
	delete(set, s)
	if len(set) == 0 {
		delete(l.subs, s.key)
	}
}

// close stops the listener, closes its connection and wakes everyone.
func (l *listener) close() {
	l.mu.Lock()
	if !l.closed {
		close(l.stop)
	}
	l.closed = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	l.wakeAll()
}

// run keeps the listening connection up until ctx ends.
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	pause := retryMin
	for {
		conn, err := l.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			l.wakeAll() // the waiters re-check meanwhile
			select {
			case <-time.After(pause/2 + rand.N(pause)):
			case <-ctx.Done():
				return
			}
			pause = min(2*pause, retryMax)
			continue
		}
		pause = retryMin
		l.setUp(true)
		_ = l.receive(ctx, conn)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
		l.setUp(false)
		if ctx.Err() != nil {
			return
		}
	}
}

// connect opens the listening connection and LISTENs on the schema's
// channel and on the engine's own.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if l.conf != nil {
		conn, err := pgx.ConnectConfig(ctx, l.conf)
		if err != nil {
			return nil, err
		}
		if err := l.listen(ctx, conn); err != nil {
			_ = conn.Close(context.Background())
			return nil, err
		}
		return conn, nil
	}
	pc, err := l.e.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.listen(ctx, pc.Conn()); err != nil {
		pc.Release()
		return nil, err
	}
	return pc.Hijack(), nil
}

// listen LISTENs on conn on both channels.
func (l *listener) listen(ctx context.Context, conn *pgx.Conn) error {
	for _, ch := range []string{l.ch, l.own} {
		if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(ch)); err != nil {
			return err
		}
	}
	return nil
}

// receive delivers notifications until the connection fails or ctx ends.
func (l *listener) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, idlePing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.deliver(n.Payload)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, connectTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return err
	}
}

// setUp records whether the listener LISTENs, and wakes every
// subscription either way: after a reconnect, notifications sent while it
// was down are lost, so every local waiter re-checks.
func (l *listener) setUp(up bool) {
	l.mu.Lock()
	if up {
		close(l.ready)
	} else {
		l.ready = make(chan struct{})
	}
	l.mu.Unlock()
	l.wakeAll()
}

// deliver wakes the subscriptions a notification '<name key> <message>'
// is for: the waiter it addresses ('w:<waiter>') and the plain
// subscribers; the plain subscribers alone for 'handed' (the lock was
// freed and its queue's head woken on its own channel); everyone on the
// name otherwise.
func (l *listener) deliver(payload string) {
	key, msg, ok := strings.Cut(payload, " ")
	if !ok {
		return
	}
	to, addressed := strings.CutPrefix(msg, "w:")
	handed := msg == "handed"
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs[key] {
		if s.waiter == "" || !handed && (!addressed || s.waiter == to) {
			s.Wake()
		}
	}
}

func (l *listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.subs {
		for s := range set {
			s.Wake()
		}
	}
}
