package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Event-stream tunables: a stream that says nothing for idleTimeout (the
// server sends a heartbeat every 15s) is taken as dead; a broken stream is
// reopened after a jittered backoff between minBackoff and maxBackoff.
const (
	// linger is how long a stream stays open after its last waiter left, so
	// that a client waiting for the same lock again reuses it instead of
	// opening a new connection. The server counts it as a waiter meanwhile.
	linger      = 500 * time.Millisecond
	idleTimeout = 45 * time.Second
	// openTimeout bounds the opening of a stream on one server when the
	// Engine has others to try.
	openTimeout = 5 * time.Second
	minBackoff  = 50 * time.Millisecond
	maxBackoff  = 2 * time.Second
)

// stream is one open GET /v1/locks/{name}/events, shared by every waiter of
// the Engine on that name (reference-counted).
type stream struct {
	e       *Engine
	name    string
	waiter  string // a queue's waiter: the stream is its own, not shared
	key     string // in e.subs
	ctx     context.Context
	cancel  context.CancelFunc
	ready   chan struct{} // closed when the server first confirmed, or err is set
	err     error         // why the stream could not be opened
	members map[*subscription]struct{}
	timer   *time.Timer // ends the stream after linger without members
}

// subscription is one waiter's handle on a stream.
type subscription struct {
	s *stream
	engine.Signal
	once sync.Once
}

// Close implements engine.Subscription; the stream ends with its last
// member.
func (s *subscription) Close() { s.once.Do(func() { s.s.leave(s) }) }

// Subscribe implements engine.Engine. It returns once the server confirmed
// that it is subscribed to the lock's releases (the stream's "ready"
// event), so no release after it can be missed. If the stream breaks later,
// the subscription is woken (a release may have been missed) and the stream
// reopened.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.subscribe(ctx, name, "")
}

// SubscribeWaiter implements engine.Queuer: a stream of the waiter's own
// (GET /v1/locks/{name}/events?waiter=ID), which the server feeds with the
// wake-ups addressed to it.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return e.subscribe(ctx, name, waiter)
}

func (e *Engine) subscribe(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	key := name
	if waiter != "" {
		key = name + "\x00" + waiter
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, engine.ErrClosed
	}
	st := e.subs[key]
	if st == nil {
		st = &stream{e: e, name: name, waiter: waiter, key: key, ready: make(chan struct{}), members: make(map[*subscription]struct{})}
		st.ctx, st.cancel = context.WithCancel(e.ctx)
		e.subs[key] = st
		e.wg.Add(1)
		go st.run()
	}
	sub := &subscription{s: st, Signal: engine.NewSignal()}
	st.members[sub] = struct{}{}
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	e.mu.Unlock()

	select {
	case <-st.ready:
		if st.err != nil {
			sub.Close()
			return nil, st.err
		}
		return sub, nil
	case <-ctx.Done():
		sub.Close()
		return nil, ctx.Err()
	}
}

// leave drops a member; the stream ends linger after its last one left,
// unless another waiter joined meanwhile.
func (st *stream) leave(sub *subscription) {
	e := st.e
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(st.members, sub)
	if len(st.members) > 0 || st.timer != nil {
		return
	}
	if st.waiter != "" {
		st.end() // a waiter's own stream: nobody will reuse it
		return
	}
	select {
	case <-st.ready:
		if st.err != nil {
			return // it failed and is gone already
		}
	default:
		st.end() // never confirmed: do not keep it
		return
	}
	var t *time.Timer
	t = time.AfterFunc(linger, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if st.timer == t && len(st.members) == 0 {
			st.end()
		}
	})
	st.timer = t
}

// end forgets the stream and closes it; e.mu is held.
func (st *stream) end() {
	if st.e.subs[st.key] == st {
		delete(st.e.subs, st.key)
	}
	st.timer = nil
	st.cancel()
}

// wakeAll wakes every member.
func (st *stream) wakeAll() {
	st.e.mu.Lock()
	defer st.e.mu.Unlock()
	for m := range st.members {
		m.Wake()
	}
}

// run keeps the stream open until it has no members or the Engine closes.
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
			st.wakeAll() // reopened: releases may have been missed meanwhile
			backoff = minBackoff
		})
		if st.ctx.Err() != nil {
			if !confirmed {
				st.fail(engine.ErrClosed)
			}
			return
		}
		if !confirmed {
			st.fail(err)
			return
		}
		st.wakeAll()
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

// fail reports that the stream could not be opened: every waiting
// Subscribe returns err, and the next Subscribe opens a new stream.
func (st *stream) fail(err error) {
	e := st.e
	e.mu.Lock()
	if e.subs[st.key] == st {
		delete(e.subs, st.key)
	}
	e.mu.Unlock()
	st.err = err
	close(st.ready)
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
	e := st.e
	target := s.base + lockPath(st.name, "events")
	if st.waiter != "" {
		target += "?waiter=" + url.QueryEscape(st.waiter)
	}
	req, err := e.newRequest(ctx, http.MethodGet, target, nil, "text/event-stream")
	if err != nil {
		return err
	}
	open := time.AfterFunc(openTimeout, cancel)
	if len(e.servers) == 1 {
		open.Stop() // nobody else to try: wait as long as it takes
	}
	resp, err := e.hc.Do(req)
	if !open.Stop() && len(e.servers) > 1 {
		// The server did not answer in time: it is left for the next.
		if err == nil {
			resp.Body.Close()
		}
		return &url.Error{Op: http.MethodGet, URL: target, Err: fmt.Errorf("no answer within %v", openTimeout)}
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		return errorFrom("subscribe", resp.StatusCode, data)
	}
	*opened = true
	// A stream that says nothing, not even its heartbeat, is dead.
	idle := time.AfterFunc(idleTimeout, cancel)
	defer idle.Stop()
	r := bufio.NewReader(resp.Body)
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		idle.Reset(idleTimeout)
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case line == "":
			switch event {
			case api.EventReady:
				onReady()
			case api.EventRelease:
				st.wakeAll()
			case "shutdown":
				return fmt.Errorf("distlock server: subscribe: the server is shutting down")
			}
			event = ""
		}
	}
}
