package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Several servers. An Engine may name several servers of one backend (two
// distlock serve processes on one Redis, etcd or PostgreSQL): it sends
// every request to its current server, and when that one does not answer
// (or answers that it is shutting down, or that its backend failed) it
// moves to the next and sends the request again there, but only when doing
// so is safe:
//
//   - a request that never reached the server (the connection was refused)
//     is sent again whatever it is;
//   - a request whose outcome is unknown (the connection broke after it
//     was sent, the server answered 5xx) is sent again when the backend
//     makes a second copy harmless: an acquire carries its attempt id (the
//     engine answers a repeated attempt as before, without a second hold),
//     an extension sets a ttl, a heartbeat, a leave, a fence raise, a
//     metadata or limit change set a value, a read changes nothing;
//   - a release whose outcome is unknown is not sent again blindly (a
//     second copy would drop a second hold of a re-entrant owner): the next
//     server is asked whether the owner still holds the lock; if not, the
//     release took effect; if so, it is sent again for a one-off owner (one
//     hold: see oneOffs), and for another the error is returned and the
//     hold lapses at its ttl. A force-release is sent again only when it
//     never arrived.
//
// Servers that do not share their locks must never stand in for each
// other: before an Engine of several servers first uses a server (and
// again after that server failed), it reads GET /v1/info, and uses the
// server only when it reports the same backend as the first server the
// Engine used. A server on the embedded engine reports a backend of its
// own process, so two of them never match: the Engine refuses the second
// with a *MismatchError instead of carrying on there without the locks.
// (An Engine of one server reads its info once too, before its first
// request: for the ttls its engine keeps, caps.go.)

// srv is one of an Engine's servers.
type srv struct {
	base string // scheme://host[:port][/path], without a trailing slash

	mu     sync.Mutex
	vetted bool // its backend was read and is the Engine's
}

// ErrBackendMismatch is matched (errors.Is) by a *MismatchError.
var ErrBackendMismatch = errors.New("distlock server: the servers do not share their locks")

// MismatchError: a server the Engine names serves other locks than the
// server it used first (another backend, or an embedded engine of its
// own), so the Engine does not use it. No retry mends it (Permanent).
type MismatchError struct {
	Server  string // the refused server
	Backend string // the backend it reports
	First   string // the server the Engine used first
	Want    string // the backend that one reports
}

func (e *MismatchError) Error() string {
	what := func(b string) string {
		switch {
		case b == "":
			return "no backend id"
		case strings.HasPrefix(b, "embedded:"):
			return "an embedded engine of its own (" + b + ")"
		}
		return "backend " + b
	}
	return fmt.Sprintf("distlock server %s serves %s, but %s serves %s: they do not share their locks, so one cannot stand in for the other "+
		"(name only servers of one shared backend; an embedded server's locks are its own)", e.Server, what(e.Backend), e.First, what(e.Want))
}

// Is matches ErrBackendMismatch.
func (e *MismatchError) Is(target error) bool { return target == ErrBackendMismatch }

// Permanent implements engine.Permanent.
func (e *MismatchError) Permanent() bool { return true }

// parseServers reads one server URL, or several separated by commas.
func parseServers(list string) ([]*srv, error) {
	var out []*srv
	seen := map[string]bool{}
	for _, raw := range strings.Split(list, ",") {
		base, err := parseServer(raw)
		if err != nil {
			return nil, err
		}
		if seen[base] {
			return nil, urlErr(raw, "named twice")
		}
		seen[base] = true
		out = append(out, &srv{base: base})
	}
	return out, nil
}

// parseServer reads one server URL into its base.
func parseServer(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", urlErr(raw, "empty (separate several servers with single commas)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", urlErr(raw, err.Error())
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", urlErr(raw, "want http://host:port or https://host:port")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", urlErr(raw, "no user, query or fragment allowed (use WithToken)")
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.EscapedPath(), "/"), nil
}

func urlErr(raw, reason string) error {
	return fmt.Errorf("distlock/engine/remote: %w", &engine.ArgumentError{Arg: "server URL", Reason: fmt.Sprintf("%q: %s", raw, reason)})
}

// Servers returns the base URLs of the Engine's servers, in order.
func (e *Engine) Servers() []string {
	out := make([]string, len(e.servers))
	for i, s := range e.servers {
		out[i] = s.base
	}
	return out
}

// current is the index of the server requests go to first.
func (e *Engine) current() int { return int(e.cur.Load()) % len(e.servers) }

// moveOn makes the server after i current, unless another request moved
// on from i already.
func (e *Engine) moveOn(i int) {
	e.servers[i].forget()
	e.cur.CompareAndSwap(int64(i), int64((i+1)%len(e.servers)))
}

// settleOn makes i current after a request it answered, when the request
// began at from.
func (e *Engine) settleOn(from, i int) {
	if from != i {
		e.cur.CompareAndSwap(int64(from), int64(i))
	}
}

// forget makes the server's backend be read again before its next use (it
// failed: it may come back as another process).
func (s *srv) forget() {
	s.mu.Lock()
	s.vetted = false
	s.mu.Unlock()
}

// vet reads server i's info before the Engine first uses it (and, with
// several servers, again after it failed): it checks that the server
// serves the Engine's backend (see pin) and learns the ttls its engine
// keeps (see learn); deadline as for send. An Engine of one server reads
// it once.
func (e *Engine) vet(ctx context.Context, deadline time.Time, i int) error {
	s := e.servers[i]
	s.mu.Lock()
	ok := s.vetted
	s.mu.Unlock()
	if ok {
		return nil
	}
	var info api.InfoResponse
	if err := e.send(ctx, deadline, s, "ping", http.MethodGet, "/v1/info", nil, &info); err != nil {
		return err
	}
	if err := e.pin(s.base, info.Backend); err != nil {
		return err
	}
	e.learn(info)
	s.mark()
	return nil
}

// pin compares the backend a server reports with the Engine's: the first
// server read sets it; another one is a *MismatchError.
func (e *Engine) pin(server, backend string) error {
	e.idMu.Lock()
	defer e.idMu.Unlock()
	if !e.pinned {
		e.pinned, e.backend, e.pinnedBy = true, backend, server
	}
	if backend != e.backend {
		return &MismatchError{Server: server, Backend: backend, First: e.pinnedBy, Want: e.backend}
	}
	return nil
}

// mark records that the server's backend is the Engine's.
func (s *srv) mark() {
	s.mu.Lock()
	s.vetted = true
	s.mu.Unlock()
}

// retry says what may be sent again on another server.
type retry int

const (
	// retryUnsent: only a request that never reached the server.
	retryUnsent retry = iota
	// retryAlways: any request whose outcome is unknown too.
	retryAlways
)

// unsent reports whether err shows that the request never reached the
// server: the connection could not be made.
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// failedOver reports whether err, an answer of one server, sends the
// request on to the next: the server did not answer (a transport error)
// or answered that it cannot (shutting down, its backend failed, a
// proxy's 502, 503 or 504), and the request may be sent again (how).
// An error of the caller's context is not the server's.
func failedOver(ctx context.Context, err error, how retry) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, engine.ErrClosed) {
		return false
	}
	var me *MismatchError
	if errors.As(err, &me) {
		return true // the server must not be used: try the next
	}
	if unsent(err) {
		return true
	}
	if how != retryAlways {
		return false
	}
	var he *Error
	if errors.As(err, &he) {
		switch he.Code {
		case api.CodeShuttingDown, api.CodeBackendUnavailable, "http_502", "http_503", "http_504":
			return true
		}
		return false
	}
	var ue *url.Error
	return errors.As(err, &ue)
}

// attemptShare is the part of the caller's time (engine.CallerDeadline:
// the distlock Client keeps a request that may grant on the wire past its
// caller's deadline, to learn and undo a late grant) one
// server gets when others are left to try (left of them): so a server that
// hangs leaves time for the next, as a renewal must within its lease's
// validity. Without a deadline there is no share (zero); the last server
// tried has no share either: it has what is left of ctx.
func attemptShare(ctx context.Context, left int) time.Duration {
	dl, ok := engine.CallerDeadline(ctx)
	if !ok || left == 0 {
		return 0
	}
	return max(time.Until(dl)/time.Duration(left+1), minShare)
}

// minShare is the least time one server is given by attemptShare.
const minShare = 100 * time.Millisecond
