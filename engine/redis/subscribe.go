package redis

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// linger is how long a subscription connection stays open after its last
// channel was dropped, and how long a channel stays subscribed after its
// last waiter left: a Client that waits for a name again soon (a lock
// handed round among processes) finds it subscribed, and sends no
// SUBSCRIBE and UNSUBSCRIBE per wait.
const linger = 2 * time.Second

// idlePing is how long the reader waits for a message before it pings the
// server, and pongWait how long it then waits for the answer (or any
// message): a connection that stays silent that long is given up and its
// channels are subscribed again wherever the client now sends its commands.
// A server that stopped (SIGSTOP, a partition) keeps its socket open, and
// go-redis never reconnects a pub/sub connection on a receive timeout: on
// a Sentinel deployment whose master stopped and was failed over, the
// subscriptions would otherwise stay on the old master, and a latch's Wait
// or an election's Observe would hear nothing until it came back.
const (
	idlePing = 2 * time.Second
	pongWait = 3 * time.Second
)

// evacuateAfter is the number of failed receives in a row after which a
// sharded connection's channels are subscribed again wherever the cluster
// now serves them.
const evacuateAfter = 4

// resubscribeAttempt bounds one attempt to subscribe a channel whose
// connection failed or whose slot moved, on the master that serves it
// now; attempts go on until that succeeds, the hub unwatched the channel
// (its linger after the last waiter left), or the Engine is closed
// (meanwhile the waits stay bounded by the holder's ttl and the waiters'
// heartbeats).
const resubscribeAttempt = 5 * time.Second

// sendTimeout bounds one SUBSCRIBE or UNSUBSCRIBE its connection's sender
// writes, once go-redis lets it (a reconnect in progress holds the
// connection until it is done).
const sendTimeout = time.Second

// watcher is the Engine's pub/sub transport (an engine.Watcher), which
// multiplexes every waiter of the Engine onto its pub/sub connections: one
// connection in all with classic pub/sub, one per master serving a waited-
// for channel with sharded pub/sub (Cluster). Its hub keeps the
// subscriptions, by channel, and has it subscribe each channel once.
type watcher struct {
	e       *Engine
	hub     *engine.Hub
	mu      sync.Mutex
	conns   map[string]*subConn // by node address; "" for classic pub/sub
	chans   map[string]*channelState
	closed  bool
	stop    chan struct{} // closed by close
	readers sync.WaitGroup
}

// subConn is one pub/sub connection and the number of channels on it.
//
// Its SUBSCRIBEs and UNSUBSCRIBEs are written by its own sender goroutine,
// in the order they were asked for, never by a caller: go-redis holds a
// pub/sub connection while it reconnects it (a dial and a handshake that
// wait for the server, whatever the caller's context), and a caller that
// wrote itself would wait that long, holding w.mu, and every other
// channel's Watch and Unwatch with it. A Watch waits for the server's
// confirmation or its context, whichever comes first.
type subConn struct {
	node   string
	ps     *goredis.PubSub
	n      int
	timer  *time.Timer    // retires c after linger once n is 0
	unsubs map[string]int // our SUNSUBSCRIBEs not answered yet, by channel
	ops    []subOp        // to send, in order (w.mu)
	kick   chan struct{}  // cap 1: ops were queued
	quit   chan struct{}  // closed by retire: the sender closes ps and ends
}

// subOp is one SUBSCRIBE (sub) or UNSUBSCRIBE of ch for a subConn's
// sender; sent, if not nil, gets the outcome of the write.
type subOp struct {
	ch   string
	sub  bool
	sent chan error // cap 1
}

// channelState is one subscribed channel.
type channelState struct {
	conn      *subConn      // nil while it moves to another master
	ready     chan struct{} // closed on the server's confirmation
	confirmed bool
}

func newWatcher(e *Engine) *watcher {
	w := &watcher{e: e, conns: make(map[string]*subConn), chans: make(map[string]*channelState), stop: make(chan struct{})}
	w.hub = engine.NewHub(w, linger)
	return w
}

// Subscribe implements engine.Engine. It returns once the server confirmed
// the subscription, so no release after it can be missed.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.watch.hub.Subscribe(ctx, e.channel(name), "")
}

// SubscribeWaiter implements engine.Queuer: the subscription shares the
// Engine's wake-up channel for the name (wakeChannel, which the waiter's
// queue entry names) with the Engine's other waiters for it, and is woken
// by the wake-ups addressed to waiter (a message 'w:<waiter>') and after a
// reconnect. The wake-ups of other engines' waiters never reach it.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return e.watch.hub.Subscribe(ctx, e.wakeChannel(name), waiter)
}

// nodeOf returns the master that serves channel ch with sharded pub/sub,
// by address and client; "" and nil with classic pub/sub (one connection,
// anywhere).
func (w *watcher) nodeOf(ctx context.Context, ch string) (string, *goredis.Client, error) {
	if w.e.sharded == nil {
		return "", nil, nil
	}
	c, err := w.e.sharded.MasterForKey(ctx, ch)
	if err != nil {
		return "", nil, err
	}
	return c.Options().Addr, c, nil
}

// Watch implements engine.Watcher: it subscribes ch and returns once the
// server confirmed it.
func (w *watcher) Watch(ctx context.Context, ch string) error {
	node, nc, err := w.nodeOf(ctx, ch)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return engine.ErrClosed
	}
	st := &channelState{ready: make(chan struct{})}
	sent := w.subscribe(st, node, nc, ch)
	w.chans[ch] = st
	c := st.conn
	w.mu.Unlock()
	for {
		select {
		case <-st.ready:
			return nil
		case <-ctx.Done():
			w.Unwatch(ch)
			return ctx.Err()
		case err := <-sent:
			sent = nil
			if err != nil && w.onConn(st, c) {
				w.Unwatch(ch)
				return err
			}
			// Sent; or its connection was given up meanwhile, and the
			// channel is being subscribed again elsewhere (relocate).
		}
	}
}

// onConn reports whether st is still subscribed on c.
func (w *watcher) onConn(st *channelState, c *subConn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return st.conn == c
}

// Unwatch implements engine.Watcher: it unsubscribes ch (the hub calls it
// once ch lingered without waiters).
func (w *watcher) Unwatch(ch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.chans[ch]
	if st == nil {
		return
	}
	delete(w.chans, ch)
	if !w.closed {
		w.unsubscribe(st, ch) // nothing to send while it moves to another master
	}
}

// subscribe queues the subscription of ch on the connection to node
// (client nc with sharded pub/sub), opening it if needed, and records it
// in st; w.mu is held, and w is not closed. It returns at once: the
// returned channel gets the outcome of the write, and the server's
// confirmation readies st (confirmed). A sharded connection is a pub/sub
// connection of the node's own client, so that it stays with that node
// whatever it reconnects for.
func (w *watcher) subscribe(st *channelState, node string, nc *goredis.Client, ch string) <-chan error {
	c := w.conns[node]
	if c == nil {
		c = &subConn{node: node, unsubs: make(map[string]int),
			kick: make(chan struct{}, 1), quit: make(chan struct{})}
		if nc != nil {
			c.ps = nc.SSubscribe(context.Background())
		} else {
			c.ps = w.e.client.Subscribe(context.Background())
		}
		w.conns[node] = c
		w.readers.Add(2)
		go w.read(c)
		go w.send(c)
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.n++
	st.conn = c
	sent := make(chan error, 1)
	w.queue(c, subOp{ch: ch, sub: true, sent: sent})
	return sent
}

// unsubscribe drops ch from the connection st is on; w.mu is held. The
// UNSUBSCRIBE goes after every earlier operation on the connection.
func (w *watcher) unsubscribe(st *channelState, ch string) {
	c := st.conn
	if c == nil {
		return
	}
	st.conn = nil
	c.n--
	if w.e.sharded != nil {
		c.unsubs[ch]++
	}
	w.queue(c, subOp{ch: ch})
	w.idle(c)
}

// queue hands op to c's sender; w.mu is held.
func (w *watcher) queue(c *subConn, op subOp) {
	c.ops = append(c.ops, op)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// send writes c's queued operations in order until c is retired; then it
// fails the subscriptions still queued, closes c's connection (which ends
// its reader) and returns.
func (w *watcher) send(c *subConn) {
	defer w.readers.Done()
	for {
		select {
		case <-c.kick:
		case <-c.quit:
			w.mu.Lock()
			ops := c.ops
			c.ops = nil
			w.mu.Unlock()
			for _, op := range ops {
				if op.sent != nil {
					op.sent <- engine.ErrClosed
				}
			}
			_ = c.ps.Close()
			return
		}
		for op, ok := w.next(c); ok; op, ok = w.next(c) {
			err := w.write(c, op)
			if op.sent != nil {
				op.sent <- err
			}
		}
	}
}

// next takes the first operation queued on c, unless c was retired.
func (w *watcher) next(c *subConn) (subOp, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-c.quit:
		return subOp{}, false
	default:
	}
	if len(c.ops) == 0 {
		return subOp{}, false
	}
	op := c.ops[0]
	c.ops = c.ops[1:]
	return op, true
}

// write sends one operation on c's connection.
func (w *watcher) write(c *subConn, op subOp) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	switch {
	case op.sub && w.e.sharded != nil:
		return c.ps.SSubscribe(ctx, op.ch)
	case op.sub:
		return c.ps.Subscribe(ctx, op.ch)
	case w.e.sharded != nil:
		return c.ps.SUnsubscribe(ctx, op.ch)
	}
	return c.ps.Unsubscribe(ctx, op.ch)
}

// retire ends c: its sender closes its connection, and its reader ends;
// w.mu is held, and c is no longer in w.conns.
func (w *watcher) retire(c *subConn) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
}

// idle arms c's linger timer when no channel is subscribed on it; w.mu is
// held.
func (w *watcher) idle(c *subConn) {
	if c.n > 0 || w.closed || c.timer != nil {
		return
	}
	c.timer = time.AfterFunc(linger, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.conns[c.node] == c && c.n == 0 && c.timer != nil {
			delete(w.conns, c.node)
			w.retire(c)
		}
	})
}

// read delivers the server's pub/sub messages on c to the waiters until c
// is closed.
func (w *watcher) read(c *subConn) {
	defer w.readers.Done()
	ctx := context.Background()
	failures := 0
	pinged := false // a ping is out, and nothing came since
	for {
		wait := idlePing
		if pinged {
			wait = pongWait
		}
		msg, err := c.ps.ReceiveTimeout(ctx, wait)
		if w.gone(c) {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if pinged {
					// Silent through a ping: the server stopped or is
					// cut off. Its channels go to whoever serves them
					// now (after a failover, the new master).
					w.hub.WakeAll()
					w.evacuate(c)
					return
				}
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				pinged = c.ps.Ping(pctx) == nil
				cancel()
				continue
			}
			pinged = false
			// The connection broke: go-redis reconnects and subscribes
			// again on the next receive. Messages may have been lost, so
			// every waiter re-checks; answers to our SUNSUBSCRIBEs will not
			// come. A master that stays unreachable may have failed over:
			// its channels go to whoever serves them now.
			w.mu.Lock()
			clear(c.unsubs)
			w.mu.Unlock()
			w.hub.WakeAll()
			failures++
			if w.e.sharded != nil && failures == evacuateAfter {
				w.evacuate(c)
				return
			}
			time.Sleep(backoff(failures))
			continue
		}
		failures, pinged = 0, false
		switch m := msg.(type) {
		case *goredis.Message:
			w.deliver(m.Channel, m.Payload)
		case *goredis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				w.confirmed(m.Channel)
			case "sunsubscribe":
				w.moved(c, m.Channel)
			}
		}
	}
}

// moved handles a sunsubscribe on c: the answer to a SUNSUBSCRIBE of ours
// is counted off; otherwise the server dropped the channel on its own (its
// slot went to another master): its waiters re-check at once, and the
// channel is subscribed again on the slot's new master.
func (w *watcher) moved(c *subConn, ch string) {
	w.mu.Lock()
	if c.unsubs[ch] > 0 { // the answer to one of ours (answers come in order)
		if c.unsubs[ch]--; c.unsubs[ch] == 0 {
			delete(c.unsubs, ch)
		}
		w.mu.Unlock()
		return
	}
	st := w.chans[ch]
	if st == nil || st.conn != c || w.closed {
		w.mu.Unlock()
		return
	}
	w.unsubscribe(st, ch) // go-redis would subscribe it here again on a reconnect
	w.relocate(st, ch, c.node)
	w.mu.Unlock()
}

// evacuate closes c, which keeps failing or went silent, and subscribes
// its channels again on the masters that serve them now (the same one,
// once it is back; with classic pub/sub, wherever the client connects now:
// a Sentinel failover client's new master).
func (w *watcher) evacuate(c *subConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.conns[c.node] != c {
		return
	}
	delete(w.conns, c.node)
	w.retire(c)
	for ch, st := range w.chans {
		if st.conn == c {
			st.conn = nil
			w.relocate(st, ch, "")
		}
	}
}

// relocate wakes the waiters of ch, which has no connection now, and starts
// its subscription on the master that serves it, avoiding the node it left
// when that is not "" (a lingering channel too: the hub re-uses it); w.mu
// is held.
func (w *watcher) relocate(st *channelState, ch, avoid string) {
	w.hub.Wake(ch)
	w.readers.Add(1)
	go func() {
		defer w.readers.Done()
		w.resubscribe(st, ch, avoid)
	}()
}

// resubscribe subscribes ch on the master that serves it now, as soon as
// go-redis's view of the cluster names one other than avoid (for a moved
// slot, the node that dropped it; after a few tries any node will do).
func (w *watcher) resubscribe(st *channelState, ch, avoid string) {
	for i := 1; ; i++ {
		select {
		case <-w.stop:
			return
		case <-time.After(backoff(i)):
		}
		if !w.orphan(st, ch) {
			return // unwatched, or subscribed again meanwhile
		}
		if w.tryResubscribe(st, ch, avoid, i) {
			return
		}
	}
}

// orphan reports whether st is still ch's state (watched) and has no
// connection.
func (w *watcher) orphan(st *channelState, ch string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.closed && w.chans[ch] == st && st.conn == nil
}

// tryResubscribe makes attempt i of resubscribe, bounded by
// resubscribeAttempt, and reports whether ch is subscribed (or needs no
// more attempts).
func (w *watcher) tryResubscribe(st *channelState, ch, avoid string, i int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), resubscribeAttempt)
	defer cancel()
	if w.e.sharded != nil {
		w.e.sharded.ReloadState(ctx)
	}
	node, nc, err := w.nodeOf(ctx, ch)
	if err != nil || (w.e.sharded != nil && node == avoid && i < 10) {
		return false
	}
	// A server that does not answer (stopped, cut off) is found out here,
	// not by a dial under w.mu, which would hold every other channel's
	// Watch and Unwatch for the whole attempt.
	var pinger goredis.Cmdable = w.e.client
	if nc != nil {
		pinger = nc
	}
	if pinger.Ping(ctx).Err() != nil {
		return false
	}
	w.mu.Lock()
	if w.closed || w.chans[ch] != st || st.conn != nil {
		w.mu.Unlock()
		return true
	}
	sent := w.subscribe(st, node, nc, ch)
	c := st.conn
	w.mu.Unlock()
	w.hub.Wake(ch) // a release may have come in between
	select {
	case err = <-sent:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st.conn == c && w.chans[ch] == st && !w.closed {
		w.unsubscribe(st, ch) // an orphan again: the next attempt
	}
	return false
}

// confirmed handles a subscribe confirmation of ch: it readies a new
// channel, or, for one already confirmed (a resubscription after a
// reconnect), makes its waiters re-check.
func (w *watcher) confirmed(ch string) {
	w.mu.Lock()
	st := w.chans[ch]
	first := st != nil && !st.confirmed
	if first {
		st.confirmed = true
		close(st.ready)
	}
	w.mu.Unlock()
	if st != nil && !first {
		w.hub.Wake(ch)
	}
}

// deliver wakes the waiters a message on ch is for: the one it addresses
// ('w:<waiter id>') and the plain subscribers, or everyone. A message that
// carries the lock's state (parseNotice) gives it to the plain
// subscribers, an election's observers.
func (w *watcher) deliver(ch, payload string) {
	to, addressed := strings.CutPrefix(payload, "w:")
	if n, noticed := parseNotice(payload); noticed {
		w.hub.Notice(ch, n)
		w.hub.WakeIf(ch, func(waiter string) bool { return waiter != "" })
		return
	}
	w.hub.WakeIf(ch, func(waiter string) bool { return !addressed || waiter == "" || waiter == to })
}

// gone reports whether c is no longer one of the watcher's connections.
func (w *watcher) gone(c *subConn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed || w.conns[c.node] != c
}

// close wakes every subscription, ends the subscription connections and
// waits for their readers.
func (w *watcher) close() {
	w.hub.Close()
	w.mu.Lock()
	if !w.closed {
		close(w.stop)
	}
	w.closed = true
	for _, c := range w.conns {
		w.retire(c)
	}
	w.conns = make(map[string]*subConn)
	w.mu.Unlock()
	w.readers.Wait()
}

// backoff is the jittered pause after the n-th consecutive connection error.
func backoff(n int) time.Duration {
	d := 10 * time.Millisecond << min(n, 5)
	return d/2 + rand.N(d/2+1)
}
