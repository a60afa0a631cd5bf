package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// heartbeat is how often an idle event stream sends a comment line, so
// that proxies keep it open and a dead client is noticed, and so that a
// client notices a server that stopped answering (a stopped process keeps
// its connections open): a lock stream announces it in its "ready" event
// (api.ReadyEvent), and the remote engine takes a stream silent for three
// of them as dead and goes on through another server. It was 15 s, which
// left a latch's waiter whose stream hung on a stopped server without
// word of the count's zero for over a minute while another server
// answered.
const heartbeat = 5 * time.Second

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// startSSE sends the headers of an event stream, or answers an error when
// the connection cannot stream.
func startSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeError(w, newError(http.StatusInternalServerError, api.CodeNotSupported, "this connection cannot stream events"))
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, f: f}, true
}

// event sends one event; data must be one line.
func (e *sse) event(name, data string) error {
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

// comment sends a comment line (a heartbeat).
func (e *sse) comment(text string) error {
	if _, err := io.WriteString(e.w, ": "+text+"\n\n"); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

// pump sends an event named name, with data(v) as its data, for every value
// v from next, and a heartbeat comment when idle, until the client goes
// away, next is closed, a write fails, or the server shuts down (a last
// "shutdown" event).
func pump[T any](s *Server, r *http.Request, stream *sse, next <-chan T, name string, data func(T) string) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case v, ok := <-next:
			if !ok || stream.event(name, data(v)) != nil {
				return // the source ended (an election watch: its Client closed), or the write failed
			}
		case <-tick.C:
			if stream.comment("ping") != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.stopping:
			_ = stream.event("shutdown", "{}")
			return
		}
	}
}

// handleLockEvents serves GET /v1/locks/{name}/events: a stream of
// server-sent events that says "ready" once the server is subscribed to
// the lock's releases on its engine, then "release" after every release
// (wake-ups coalesce; a shared lock's on every engine: watchShared). With
// ?waiter=ID (a waiter of the lock's queue, on an engine with one) only the
// wake-ups addressed to that waiter are sent. The remote engine's waiters wait on it instead of
// polling. A stream counts against the waiter limits; it ends when the
// client goes away or the server shuts down.
func (s *Server) handleLockEvents(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	if s.isStopping() {
		writeError(w, shuttingDown())
		return
	}
	leave, e := s.limits.enter(name)
	if e != nil {
		writeError(w, e)
		return
	}
	defer leave()
	waiter := r.URL.Query().Get("waiter")
	if e := validateWaiter(waiter); e != nil {
		writeError(w, e)
		return
	}
	sctx, cancel := context.WithTimeout(r.Context(), engineTimeout)
	var sub engine.Subscription
	var err error
	if q, ok := s.eng.(engine.Queuer); ok && waiter != "" {
		sub, err = q.SubscribeWaiter(sctx, name, waiter)
	} else {
		sub, err = s.eng.Subscribe(sctx, name)
	}
	cancel()
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, engineErr("subscribe", err))
		}
		return
	}
	defer sub.Close()
	next := sub.C()
	if waiter == "" {
		ctx, stop := context.WithCancel(r.Context())
		defer stop()
		next = s.watchShared(ctx, name, next)
	}
	s.obs.Waiting(name, 1)
	defer s.obs.Waiting(name, -1)

	stream, ok := startSSE(w)
	ready := fmt.Sprintf(`{"heartbeat_ms":%d}`, heartbeat.Milliseconds()) // api.ReadyEvent
	if !ok || stream.event(api.EventReady, ready) != nil {
		return
	}
	pump(s, r, stream, next, api.EventRelease, func(struct{}) string { return "{}" })
}

// sharedPoll is how often a release-event stream of a shared lock reads
// its holders (watchShared).
const sharedPoll = time.Second

// watchShared makes the release events of a stream without a waiter id
// (on sub, the engine's subscription) say every release of a shared lock,
// on every engine alike: the engines wake only their queue's head when a
// shared lock's permits come back (the Redis, PostgreSQL and quorum
// engines publish nothing else; engine.Engine.Release), so a client that
// waits itself without a queue entry (an acquire with "waiting": true,
// then this stream) would never hear of it. When name is a shared lock as
// the stream starts, its holders are read every sharedPoll until ctx ends,
// and a holder gone since the last read (released, force-released or
// expired) or a limit raised is a release event too, after the engine's
// own ones (wake-ups coalesce). Elsewhere it returns sub as it is.
func (s *Server) watchShared(ctx context.Context, name string, sub <-chan struct{}) <-chan struct{} {
	if _, ok := s.eng.(engine.Sharer); !ok {
		return sub
	}
	prev, ok := s.inspectShared(ctx, name)
	if !ok || !prev.Kind.Shared() {
		return sub
	}
	out := make(chan struct{}, 1)
	wake := func() {
		select {
		case out <- struct{}{}:
		default: // one pending already: wake-ups coalesce
		}
	}
	go func() {
		defer close(out)
		tick := time.NewTicker(sharedPoll)
		defer tick.Stop()
		for {
			select {
			case _, ok := <-sub:
				if !ok {
					return
				}
				wake()
			case <-tick.C:
				if cur, ok := s.inspectShared(ctx, name); ok {
					if permitsBack(prev, cur) {
						wake()
					}
					prev = cur
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// inspectShared reads name's state for watchShared; false when the read
// failed (the next one compares with the last state read).
func (s *Server) inspectShared(ctx context.Context, name string) (engine.Info, bool) {
	ectx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	info, err := s.eng.Inspect(ectx, name)
	return info, err == nil
}

// permitsBack reports whether a shared lock's permits came back between
// two reads of its state: a holder of prev (its owner's grant, by token)
// is gone from cur, or its limit grew.
func permitsBack(prev, cur engine.Info) bool {
	if cur.Kind == prev.Kind && cur.Limit > prev.Limit {
		return true
	}
	for _, h := range prev.Holders {
		if !slices.ContainsFunc(cur.Holders, func(c engine.Holder) bool { return c.Owner == h.Owner && c.Token == h.Token }) {
			return true
		}
	}
	return false
}
