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

// listener is the engine's one listening connection (its hub's
// engine.Watcher): it LISTENs on the schema's channel and wakes the
// subscriptions a notification is for, which its hub keeps by nameKey. It
// starts with the first subscription and runs until the engine is closed;
// every name is watched while it LISTENs.
type listener struct {
	e    *Engine
	conf *pgx.ConnConfig // nil: a connection hijacked from the pool
	ch   string          // the schema's channel: every engine's messages
	own  string          // this engine's channel: its waiters' wake-ups
	hub  *engine.Hub

	mu      sync.Mutex
	ready   chan struct{} // closed while listening
	started bool
	closed  bool
	stop    chan struct{} // closed by close
	cancel  context.CancelFunc
	done    chan struct{}
}

// newListener returns e's listener; its connection is made with a copy
// of conf whose sockets e keeps (e.socks), or hijacked from e's pool.
func newListener(e *Engine, conf *pgx.ConnConfig) *listener {
	if conf != nil {
		conf = conf.Copy()
		conf.DialFunc = e.socks.dialer(conf.DialFunc)
	}
	l := &listener{e: e, conf: conf, ch: channel(e.schema), own: ownChannel(e.schema),
		ready: make(chan struct{}), stop: make(chan struct{})}
	l.hub = engine.NewHub(l, 0)
	return l
}

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
	return e.listen.hub.Subscribe(ctx, nameKey(name), waiter)
}

// Watch implements engine.Watcher: it starts the listener if needed and
// returns once it LISTENs.
func (l *listener) Watch(ctx context.Context, _ string) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return engine.ErrClosed
	}
	if !l.started {
		l.started = true
		var rctx context.Context
		rctx, l.cancel = context.WithCancel(context.Background())
		l.done = make(chan struct{})
		go l.run(rctx)
	}
	ready := l.ready
	l.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-l.stop:
		return engine.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unwatch implements engine.Watcher: the listener LISTENs for every name.
func (l *listener) Unwatch(string) {}

// close wakes everyone, stops the listener and closes its connection.
func (l *listener) close() {
	l.hub.Close()
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
			l.hub.WakeAll() // the waiters re-check meanwhile
			select {
			case <-time.After(pause/2 + rand.N(pause)):
			case <-ctx.Done():
				return
			}
			pause = min(2*pause, retryMax)
			continue
		}
		pause = retryMin
		l.markListening()
		_ = l.receive(ctx, conn)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
		l.markNotListening()
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

// markListening records that the listener LISTENs (ready closed), and
// wakes every subscription (see switchState).
func (l *listener) markListening() {
	l.switchState(func() { close(l.ready) })
}

// markNotListening records that the listener stopped listening (a new,
// open ready), and wakes every subscription (see switchState).
func (l *listener) markNotListening() {
	l.switchState(func() { l.ready = make(chan struct{}) })
}

// switchState makes change under l.mu, then wakes every subscription
// whether the listener came up or went down: after a reconnect,
// notifications sent while it was down are lost, so every local waiter
// re-checks.
func (l *listener) switchState(change func()) {
	l.mu.Lock()
	change()
	l.mu.Unlock()
	l.hub.WakeAll()
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
	l.hub.WakeIf(key, func(waiter string) bool { return waiter == "" || !handed && (!addressed || waiter == to) })
}
