package etcd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// readyTimeout bounds the wait for a new watch to be created: a
// subscription that cannot be made in time is an error (the Client then
// polls).
const readyTimeout = 5 * time.Second

// watcher keeps one etcd watch per name that this engine's subscribers
// wait on (the engine's etcd watcher multiplexes them on one gRPC stream),
// and wakes the subscribers its events concern. It is the transport
// (engine.Watcher) of its hub, which keeps the subscriptions.
type watcher struct {
	e      *Engine
	hub    *engine.Hub
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	wc     clientv3.Watcher // the engine's own: replaced when its stream hangs
	names  map[string]*watched
	closed bool

	// heard is signalled whenever a watch delivers something (events, a
	// progress notification, its creation): the probe's evidence that
	// the stream's member still answers.
	heard chan struct{}
	// silentProbes counts the probes in a row that heard nothing (the
	// probe's attempt deadline grows with them, as a request's does).
	silentProbes int
}

// watchLinger is how long a name's watch is kept after its last
// subscriber left: a Client that waits for a name again and again (a lock
// taken in turns) subscribes to a watch that runs already, with no request
// and no wait for the watch to be created.
const watchLinger = 5 * time.Second

// watched is the watch of one name.
type watched struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed once the watch was first created
}

func (w *watcher) init(e *Engine) {
	w.e = e
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.names = make(map[string]*watched)
	w.wc = clientv3.NewWatcher(e.cli)
	w.hub = engine.NewHub(w, watchLinger)
	w.heard = make(chan struct{}, 1)
	w.wg.Add(1)
	go w.probe()
}

// probeEvery is how long the watch stream may stay silent before the
// probe asks its member for the stream's progress.
const probeEvery = 2 * time.Second

// probe finds a watch stream whose member stopped answering. A member
// stopped with SIGSTOP (or a machine that hangs, a partition the kernel
// does not report) keeps the stream's connection open: its watches are not
// cancelled and deliver nothing, until gRPC's keepalive gives up on the
// connection (at least 10 s between pings; never without
// DialKeepAliveTime). A latch's Wait and an election's observer have no
// heartbeat of their own to fall back on. So whenever the stream has
// delivered nothing for probeEvery, the probe asks for its progress
// (RequestProgress: a member whose watches are in sync answers at once
// with a notification on each of them) and, when nothing at all arrives
// within an attempt deadline, replaces the engine's etcd watcher as a
// watch that is not created in time does: every watch is made again on a
// new stream, opened on the next member, and its subscribers woken.
func (w *watcher) probe() {
	defer w.wg.Done()
	t := time.NewTicker(probeEvery / 2)
	defer t.Stop()
	last := time.Now() // when the stream was last heard from
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.heard:
			last = time.Now()
			continue
		case <-t.C:
		}
		if time.Since(last) < probeEvery || !w.watching() {
			continue
		}
		wc := w.current()
		d := w.e.attemptDeadline(w.silentProbes)
		pctx, cancel := context.WithTimeout(w.ctx, d)
		// The watches' stream is the one of their context's metadata:
		// WithRequireLeader, as in run.
		err := wc.RequestProgress(clientv3.WithRequireLeader(pctx))
		if err == nil {
			select {
			case <-w.heard:
				last = time.Now()
				w.silentProbes = 0
				cancel()
				continue
			case <-pctx.Done():
			}
		}
		cancel()
		if w.ctx.Err() != nil {
			return
		}
		w.silentProbes++
		last = time.Now() // the new stream gets its own probeEvery
		w.replace(wc)
	}
}

// watching reports whether any watch was created on the current stream.
func (w *watcher) watching() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wn := range w.names {
		select {
		case <-wn.ready:
			return true
		default:
		}
	}
	return false
}

// current returns the etcd watcher watches are made on.
func (w *watcher) current() clientv3.Watcher {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wc
}

// replace closes wc, whose stream did not create a watch within an attempt
// deadline (its member is stopped, or lost the leader), unless it was
// replaced already, and makes a new one: its stream is opened on the next
// member. Every watch of the old one ends, and is made again on the new one.
func (w *watcher) replace(wc clientv3.Watcher) {
	w.mu.Lock()
	if w.wc != wc || w.closed {
		w.mu.Unlock()
		return
	}
	w.wc = clientv3.NewWatcher(w.e.cli)
	w.mu.Unlock()
	_ = wc.Close()
}

// Subscribe implements engine.Engine: the subscription is woken whenever
// the lock key changes (a release, an expiry, a grant or new metadata).
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.watch.hub.Subscribe(ctx, name, "")
}

// SubscribeWaiter implements engine.Queuer: the subscription is woken by a
// wake-up or a reservation addressed to waiter, and, while waiter heads the
// queue, by the deletion of the lock key (a release or the holder's expiry).
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return e.watch.hub.Subscribe(ctx, name, waiter)
}

// Watch implements engine.Watcher: it starts the watch of name and returns
// once it is created.
func (w *watcher) Watch(ctx context.Context, name string) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return engine.ErrClosed
	}
	wctx, cancel := context.WithCancel(w.ctx)
	wn := &watched{cancel: cancel, ready: make(chan struct{})}
	w.names[name] = wn
	w.wg.Add(1)
	ready := wn.ready
	go w.run(wctx, name, wn)
	w.mu.Unlock()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		w.Unwatch(name)
		return ctx.Err()
	case <-t.C:
		w.Unwatch(name)
		return backendErr("watch "+name, errors.New("watch not created within 5s"))
	}
}

// Unwatch implements engine.Watcher: it ends the watch of name (the hub
// calls it watchLinger after the last subscriber left).
func (w *watcher) Unwatch(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wn := w.names[name]; wn != nil {
		wn.cancel()
		delete(w.names, name)
	}
}

// run keeps the watch of name until ctx ends, and wakes every subscriber
// whenever the watch had to be made again (events may have been missed). A
// watch not created within an attempt deadline replaces the engine's etcd
// watcher, as retry sends a request again: its stream goes to another
// member.
//
// Every subscriber is woken once the watch is made again, those that came
// meanwhile too: events between the old watch's end and the new one's
// start are not delivered.
func (w *watcher) run(ctx context.Context, name string, wn *watched) {
	defer w.wg.Done()
	prefix := w.e.keys.name(name)
	slow := 0 // watches in a row not created in time (see attemptDeadline)
	ready := func() { w.created(wn) }
	for ctx.Err() == nil {
		wc := w.current()
		wctx, cancel := context.WithCancel(ctx)
		var created atomic.Bool
		// Watch itself blocks while the stream is being opened.
		stall := time.AfterFunc(w.e.attemptDeadline(slow), func() {
			if !created.Load() {
				w.replace(wc)
				cancel()
			}
		})
		ch := wc.Watch(clientv3.WithRequireLeader(wctx), prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		w.watchOn(ch, name, func() { created.Store(true); ready() })
		stall.Stop()
		cancel()
		ready = func() { w.recreated(name, wn) } // every later watch is made again
		if created.Load() {
			slow = 0
		} else {
			slow++
		}
		if ctx.Err() != nil {
			return
		}
		w.hub.Wake(name) // events may have been missed
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// created marks wn, a name's watch, as created.
func (w *watcher) created(wn *watched) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-wn.ready:
	default:
		close(wn.ready)
	}
}

// recreated marks wn, name's watch, as created when it was made again,
// and wakes name's subscribers (events may have been missed).
func (w *watcher) recreated(name string, wn *watched) {
	w.created(wn)
	w.hub.Wake(name)
}

// watchOn delivers the events of ch until it ends or fails; created is
// called when the watch is created.
func (w *watcher) watchOn(ch clientv3.WatchChan, name string, created func()) {
	for resp := range ch {
		select {
		case w.heard <- struct{}{}:
		default:
		}
		if resp.Created {
			created()
		}
		if resp.Canceled || resp.Err() != nil {
			return
		}
		w.events(name, resp.Events)
	}
}

// events wakes the subscribers that changes concern: plain subscribers on
// every change of the lock key and when the name's countdown latch reaches
// zero (its key is deleted); a waiter when a wake-up or a reservation
// names it, when it heads the queue and the lock key is deleted, and when
// the key before it in the queue is deleted other than by a grant (that
// waiter left or died: it may head the queue now).
func (w *watcher) events(name string, evs []*clientv3.Event) {
	grants := map[int64]bool{} // revisions that put the lock key
	for _, ev := range evs {
		if _, rest, ok := w.e.keys.parse(string(ev.Kv.Key)); ok && (rest == lockSuffix || strings.HasPrefix(rest, holderSuffix)) && ev.Type == mvccpb.PUT {
			grants[ev.Kv.ModRevision] = true
		}
	}
	wake := func(waiter string) {
		if waiter != "" {
			w.hub.WakeWaiter(name, waiter)
		}
	}
	for _, ev := range evs {
		_, rest, ok := w.e.keys.parse(string(ev.Kv.Key))
		if !ok {
			continue
		}
		if ev.Type == mvccpb.DELETE {
			switch {
			case rest == lockSuffix, strings.HasPrefix(rest, holderSuffix):
				w.e.heads.sawDelete(name, lockSuffix, ev.Kv.ModRevision) // a mutex or a shared holder gone
			case strings.HasPrefix(rest, queueSuffix), strings.HasPrefix(rest, sharedQueueSuffix):
				w.e.heads.sawDelete(name, string(ev.Kv.Key), ev.Kv.ModRevision)
			}
		}
		switch {
		case rest == lockSuffix:
			w.hub.WakeIf(name, func(waiter string) bool {
				return waiter == "" || (ev.Type == mvccpb.DELETE && w.e.heads.has(name, waiter))
			})
		case strings.HasPrefix(rest, holderSuffix) && ev.Type == mvccpb.DELETE:
			// A shared lock's holder left or expired: plain subscribers,
			// and the head (or a waiter whose place is not known yet: its
			// entry may be on its way) try again.
			w.hub.WakeIf(name, func(waiter string) bool {
				return waiter == "" || w.e.heads.has(name, waiter) || !w.e.heads.knows(name, waiter)
			})
		case rest == latchSuffix && ev.Type == mvccpb.DELETE:
			// A countdown latch reached zero: its waiters read it again.
			w.hub.WakeWaiter(name, "")
		case rest == wakeSuffix || rest == resSuffix || rest == sharedWakeSuffix:
			if rest == resSuffix {
				if ev.Type == mvccpb.PUT {
					w.e.heads.reserved(name, string(ev.Kv.Value), ev.Kv.ModRevision)
				} else {
					w.e.heads.reserved(name, "", 0)
				}
			}
			if ev.Type == mvccpb.PUT {
				wake(string(ev.Kv.Value))
			}
		case (strings.HasPrefix(rest, queueSuffix) || strings.HasPrefix(rest, sharedQueueSuffix)) && ev.Type == mvccpb.DELETE:
			for _, waiter := range w.e.heads.deleted(name, string(ev.Kv.Key)) {
				if !grants[ev.Kv.ModRevision] {
					wake(waiter)
				}
			}
		}
	}
}

// close wakes every subscriber and ends every watch.
func (w *watcher) close() {
	w.hub.Close()
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
	_ = w.current().Close()
}
