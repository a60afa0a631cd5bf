package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// do sends one request that may be sent again on another server whatever
// its outcome (see retryAlways).
func (e *Engine) do(ctx context.Context, op, method, path string, in, out any) error {
	return e.call(ctx, callOpts{how: retryAlways}, op, method, path, in, out)
}

// callOpts says how a request may go on to another server.
type callOpts struct {
	how retry
	// most, when positive, caps a server's share of the time (see
	// attemptShare): an acquire's answer is worth less the later it comes
	// (its validity is counted from the first send), so a server that
	// hangs gets a third of the ttl at most.
	most time.Duration
}

// call sends one request with a JSON body (in, if not nil) to the current
// server, and on to the next ones while failedOver says so (each server at
// most once); it decodes a 2xx answer into out; other answers become an
// *Error. The error of a request no server answered joins every server's.
func (e *Engine) call(ctx context.Context, o callOpts, op, method, path string, in, out any) error {
	if e.isClosed() {
		return engine.ErrClosed
	}
	var body []byte
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = data
	}
	n := len(e.servers)
	from := e.current()
	var errs []error
	for k := range n {
		i := (from + k) % n
		var deadline time.Time
		// Every request gets its share, also one that may not be sent
		// again (a release, a set's acquire): on a server that hangs (a
		// stopped process) it would otherwise spend all the caller's time
		// there, while its outcome can be learnt through the next server
		// (release asks whether the owner still holds the lock) and the
		// caller can go on there.
		if d := attemptShare(ctx, n-1-k); d > 0 {
			if o.most > 0 {
				d = max(min(d, o.most), minShare)
			}
			deadline = time.Now().Add(d)
		}
		err := e.vet(ctx, deadline, i)
		if err == nil {
			err = e.send(ctx, deadline, e.servers[i], op, method, path, body, out)
		}
		if err == nil {
			e.settleOn(from, i)
			return nil
		}
		if !failedOver(ctx, err, o.how) || n == 1 {
			if n > 1 && failedOver(ctx, err, retryAlways) {
				// The server did not answer a request that may not be
				// sent again blindly: what follows (release's question
				// whether the owner still holds, the Client's next
				// attempt) goes to the next server, not to this one.
				e.moveOn(i)
			}
			return joinTried(errs, err)
		}
		e.moveOn(i)
		errs = append(errs, err)
	}
	return joinTried(errs, nil)
}

// joinTried is the error of a request after the servers that failed it
// (errs): last alone when no server failed before it or when it is the
// caller's own end (its context, a closed Engine, an answer of the server),
// else all of them joined.
func joinTried(errs []error, last error) error {
	if len(errs) == 0 {
		return last
	}
	if last != nil {
		var he *Error
		if errors.As(last, &he) || errors.Is(last, context.Canceled) || errors.Is(last, context.DeadlineExceeded) || errors.Is(last, engine.ErrClosed) {
			return last
		}
		errs = append(errs, last)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// send sends one request to server s. A deadline (not zero) is the
// server's share of the time (attemptShare): a request it cuts off is a
// transport error, which sends the request on to another server.
func (e *Engine) send(ctx context.Context, deadline time.Time, s *srv, op, method, path string, body []byte, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if method != http.MethodGet && op != "leave" {
		// A request that changes state is given a moment to be answered
		// after ctx ends, so that its outcome is known (a grant the caller
		// can release, a "locked" that says why it waited) rather than
		// lost with the connection. Not a leave of a queue: its caller
		// bounds it (waiting.LeaveTimeout, the most a wait may overrun
		// its context), and one cut short is harmless: without heartbeats
		// the entry drops out of the queue.
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		stop := context.AfterFunc(ctx, func() {
			t := time.AfterFunc(settleGrace, cancel)
			context.AfterFunc(rctx, func() { t.Stop() })
		})
		defer stop()
		ctx = rctx
	}
	if !deadline.IsZero() {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		ctx = dctx
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := e.newRequest(ctx, method, s.base+path, rd, "application/json")
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		// The connection broke in the answer: a transport error.
		return &url.Error{Op: method, URL: s.base + path, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return errorFrom(op, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("distlock server: %s: bad answer: %v", op, err)
	}
	return nil
}

// pingGrace is how long Ping waits for the other servers once one
// answered.
const pingGrace = time.Second

// newRequest makes a request that accepts accept, with the Engine's token.
func (e *Engine) newRequest(ctx context.Context, method, target string, body io.Reader, accept string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	return req, nil
}

// Ping checks that the server answers and accepts the token, and returns
// what it runs on and the token's role. With several servers it asks every
// one: it fails when none answers (every error joined), or with a
// *MismatchError when two that answer report different backends; a server
// that does not answer is no error while another does.
func (e *Engine) Ping(ctx context.Context) (api.InfoResponse, error) {
	if e.isClosed() {
		return api.InfoResponse{}, engine.ErrClosed
	}
	infos := make([]api.InfoResponse, len(e.servers))
	errs := make([]error, len(e.servers))
	// Once one server answered, the others get pingGrace more: a server
	// that hangs does not hold Ping up (it counts as not answering).
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		grace *time.Timer
	)
	for i, s := range e.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.send(pctx, time.Time{}, s, "ping", http.MethodGet, "/v1/info", nil, &infos[i])
			if errs[i] == nil {
				once.Do(func() { grace = time.AfterFunc(pingGrace, cancel) })
			}
		}()
	}
	wg.Wait()
	if grace != nil {
		grace.Stop()
	}
	first := -1
	for i, err := range errs {
		if err != nil {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if infos[i].Backend != infos[first].Backend {
			return infos[first], &MismatchError{Server: e.servers[i].base, Backend: infos[i].Backend,
				First: e.servers[first].base, Want: infos[first].Backend}
		}
	}
	if first < 0 {
		return api.InfoResponse{}, joinTried(errs[:len(errs)-1], errs[len(errs)-1])
	}
	// An answer that is not a success (a refused token) is the answer.
	for _, err := range errs {
		var he *Error
		if errors.As(err, &he) {
			return infos[first], err
		}
	}
	e.pin(e.servers[first].base, infos[first].Backend)
	e.learn(infos[first])
	for i, err := range errs {
		if err == nil && e.pin(e.servers[i].base, infos[i].Backend) == nil {
			e.servers[i].mark()
		}
	}
	return infos[first], nil
}
