package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
// (wake-ups coalesce). With ?waiter=ID (a waiter of the lock's queue, on an
// engine with one) only the wake-ups addressed to that waiter are sent. The remote engine's waiters wait on it instead of
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
	s.obs.Waiting(name, 1)
	defer s.obs.Waiting(name, -1)

	stream, ok := startSSE(w)
	ready := fmt.Sprintf(`{"heartbeat_ms":%d}`, heartbeat.Milliseconds()) // api.ReadyEvent
	if !ok || stream.event(api.EventReady, ready) != nil {
		return
	}
	pump(s, r, stream, sub.C(), api.EventRelease, func(struct{}) string { return "{}" })
}
