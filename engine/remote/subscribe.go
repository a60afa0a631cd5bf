package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Event-stream tunables: a stream that says nothing for idleTimeout (the
// server's heartbeat, every 15s on servers that do not announce theirs),
// or for idleBeats of the heartbeat its "ready" event announces
// (api.ReadyEvent), is taken as dead; a broken stream is reopened after a
// jittered backoff between minBackoff and maxBackoff.
const (
	// linger is how long a stream stays open after its last waiter left, so
	// that a client waiting for the same lock again reuses it instead of
	// opening a new connection. The server counts it as a waiter meanwhile.
	linger      = 500 * time.Millisecond
	idleTimeout = 45 * time.Second
	idleBeats   = 3
	// openTimeout bounds the opening of a stream on one server when the
	// Engine has others to try.
	openTimeout = 5 * time.Second
	minBackoff  = 50 * time.Millisecond
	maxBackoff  = 2 * time.Second
)

// hubs are the Engine's subscriptions: plain ones in a Hub keyed by lock
// name, whose streams linger; a queue waiter's in a Hub keyed by name and
// waiter, whose stream is the waiter's own (the server addresses its
// wake-ups to it) and ends with its subscription.
type hubs struct{ plain, waiters streams }

func (h *hubs) init(e *Engine) {
	h.plain.init(e, linger)
	h.waiters.init(e, 0)
}

// Close wakes every subscription (waiters re-check and find the Engine
// closed) and stops the lingering; the Engine's context ends the streams.
func (h *hubs) Close() {
	h.plain.hub.Close()
	h.waiters.hub.Close()
}

// streams is a Hub's transport (engine.Watcher): one event stream per key,
// a lock's name or (waiters) name NUL waiter.
type streams struct {
	e    *Engine
	hub  *engine.Hub
	open map[string]*stream // under e.mu
}

func (w *streams) init(e *Engine, linger time.Duration) {
	w.e, w.open = e, make(map[string]*stream)
	w.hub = engine.NewHub(w, linger)
}

// stream is one open GET /v1/locks/{name}/events[?waiter=ID].
type stream struct {
	e      *Engine
	hub    *engine.Hub
	name   string
	waiter string // a queue's waiter: the stream is its own
	key    string // in its Hub
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed when the server first confirmed, or err is set
	err    error         // why the stream could not be opened
}

// Subscribe implements engine.Engine. It returns once the server confirmed
// that it is subscribed to the lock's releases (the stream's "ready"
// event), so no release after it can be missed. If the stream breaks later,
// the subscription is woken (a release may have been missed) and the stream
// reopened, which wakes it again.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.hub.plain.hub.Subscribe(ctx, name, "")
}

// SubscribeWaiter implements engine.Queuer: a stream of the waiter's own
// (GET /v1/locks/{name}/events?waiter=ID), which the server feeds with the
// wake-ups addressed to it.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return e.hub.waiters.hub.Subscribe(ctx, name+"\x00"+waiter, waiter)
}

// Watch implements engine.Watcher: it opens key's stream and returns once
// the server confirmed it.
func (w *streams) Watch(ctx context.Context, key string) error {
	e := w.e
	st := &stream{e: e, hub: w.hub, key: key, ready: make(chan struct{})}
	st.name, st.waiter, _ = strings.Cut(key, "\x00")
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return engine.ErrClosed
	}
	st.ctx, st.cancel = context.WithCancel(e.ctx)
	w.open[key] = st
	e.wg.Add(1)
	e.mu.Unlock()
	go st.run()
	select {
	case <-st.ready:
		if st.err == nil {
			return nil
		}
		w.Unwatch(key)
		return st.err
	case <-ctx.Done():
		w.Unwatch(key)
		return ctx.Err()
	}
}

// Unwatch implements engine.Watcher: it ends key's stream (for a lock's
// name, linger after its last subscriber left).
func (w *streams) Unwatch(key string) {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if st := w.open[key]; st != nil {
		st.cancel()
		delete(w.open, key)
	}
}

// run keeps the stream open until it is unwatched or the Engine closes.
// Whenever it breaks or is reopened, its subscribers are woken: releases
// may have been missed meanwhile.
func (st *stream) run() {
	defer st.e.wg.Done()
	defer st.cancel()
	confirmed := false
	backoff := minBackoff
	for {
		err := st.connect(func() {
			if !confirmed {
				confirmed = true
				close(st.ready)
				return
			}
			st.hub.Wake(st.key) // reopened
			backoff = minBackoff
		})
		if !confirmed {
			if st.ctx.Err() != nil {
				err = engine.ErrClosed
			}
			st.err = err
			close(st.ready)
			return
		}
		if st.ctx.Err() != nil {
			return
		}
		st.hub.Wake(st.key) // broken
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-t.C:
		case <-st.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// connect opens the stream on the current server (or, when it cannot be
// opened there, on the next one: see call) and reads it until it ends;
// onReady runs on each "ready" event.
func (st *stream) connect(onReady func()) error {
	e := st.e
	n := len(e.servers)
	from := e.current()
	var errs []error
	for k := range n {
		i := (from + k) % n
		opened := false
		err := e.vet(st.ctx, time.Now().Add(openTimeout), i)
		if err == nil {
			err = st.connectTo(e.servers[i], onReady, &opened)
		}
		if opened {
			if errors.Is(err, errSilent) && n > 1 {
				// The server went silent on an open stream (a stopped
				// process keeps its connections open): the stream is
				// opened again, and the requests that follow (a waiter's
				// re-check) are sent, on the next server, not there.
				e.moveOn(i)
				return err
			}
			e.settleOn(from, i)
			return err
		}
		if !failedOver(st.ctx, err, retryAlways) || n == 1 {
			return joinTried(errs, err)
		}
		e.moveOn(i)
		errs = append(errs, err)
	}
	return joinTried(errs, nil)
}

// connectTo opens the stream on server s and reads it until it ends;
// opened is set once the server accepted it.
func (st *stream) connectTo(s *srv, onReady func(), opened *bool) error {
	ctx, cancel := context.WithCancel(st.ctx)
	defer cancel()
	target := s.base + lockPath(st.name, "events")
	if st.waiter != "" {
		target += "?waiter=" + url.QueryEscape(st.waiter)
	}
	resp, err := st.open(ctx, cancel, target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	*opened = true
	return st.read(cancel, resp.Body, target, onReady)
}

// open sends the stream's request to target and returns the accepted
// response. With other servers to try, a server that does not answer
// within openTimeout is given up (cancel ends the request).
func (st *stream) open(ctx context.Context, cancel context.CancelFunc, target string) (*http.Response, error) {
	e := st.e
	req, err := e.newRequest(ctx, http.MethodGet, target, nil, "text/event-stream")
	if err != nil {
		return nil, err
	}
	giveUp := time.AfterFunc(openTimeout, cancel)
	if len(e.servers) == 1 {
		giveUp.Stop() // nobody else to try: wait as long as it takes
	}
	resp, err := e.hc.Do(req)
	if !giveUp.Stop() && len(e.servers) > 1 {
		// The server did not answer in time: it is left for the next.
		if err == nil {
			resp.Body.Close()
		}
		return nil, &url.Error{Op: http.MethodGet, URL: target, Err: fmt.Errorf("no answer within %v", openTimeout)}
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		return nil, errorFrom("subscribe", resp.StatusCode, data)
	}
	return resp, nil
}

// read reads the open stream body (from target) until it ends: a ready
// event calls onReady, a release wakes the stream's subscribers. A stream
// that says nothing, not even its heartbeat, for a few of the server's
// heartbeats is dead: cancel ends it.
func (st *stream) read(cancel context.CancelFunc, body io.Reader, target string, onReady func()) error {
	wait := idleTimeout
	silent := make(chan struct{})
	idle := time.AfterFunc(wait, func() { close(silent); cancel() })
	defer idle.Stop()
	r := bufio.NewReader(body)
	event, data := "", ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			select {
			case <-silent:
				return fmt.Errorf("%w: nothing for %v on %s", errSilent, wait, target)
			default:
			}
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if !idle.Reset(wait) {
			continue // fired meanwhile: the read above ends with it
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		case line == "":
			switch event {
			case api.EventReady:
				var ready api.ReadyEvent
				if json.Unmarshal([]byte(data), &ready) == nil && ready.HeartbeatMs > 0 {
					// The server's own heartbeat: silence for a few
					// of them is a server that stopped answering.
					wait = max(idleBeats*time.Duration(ready.HeartbeatMs)*time.Millisecond, time.Second)
					idle.Reset(wait)
				}
				onReady()
			case api.EventRelease:
				st.hub.Wake(st.key)
			case "shutdown":
				return fmt.Errorf("distlock server: subscribe: the server is shutting down")
			}
			event, data = "", ""
		}
	}
}

// errSilent: an open event stream said nothing, not even its heartbeat,
// for too long: its server stopped answering.
var errSilent = errors.New("distlock server: event stream silent")
