// Package remote is the lock engine that talks to a distlock server
// (distlock serve) over its HTTP API, so that Go programs and the CLI use a
// server exactly like Redis:
//
//	eng, err := remote.New("http://127.0.0.1:7420", remote.WithToken(token))
//	client := distlock.New(eng)
//
// Each engine operation is one HTTP request that the server carries out as
// one operation on its own engine; leases, renewals and loss detection stay
// in the client (distlock.Client), as on every engine. Waiters wait on a
// stream of server-sent release events per lock name (one stream per name
// per Engine, shared by its waiters), not by polling.
//
// Several servers of one shared backend may be named, separated by commas:
//
//	eng, err := remote.New("http://lock1:7420,http://lock2:7420", remote.WithToken(token))
//
// Requests go to the current server; when it stops answering, calls,
// renewals, heartbeats and event streams go on through the next (see
// servers.go for which requests are sent again, and why that is safe), and
// servers that do not share their locks (an embedded engine's) are refused
// with a *MismatchError rather than used in each other's stead. A server
// that hangs gets its share of the caller's time (half, with two servers)
// before the next is tried, and the next is current from then on.
//
// A call's time is bounded by its context, except that a request that
// changes state (all but reads and a queue's leave) is given one second
// more to be answered after its context ended, so that its
// outcome is known: through a server that does not answer, such a call
// returns up to a second after its context's end.
package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

// maxResponse bounds the body of an answer the engine reads.
const maxResponse = 8 << 20

// settleGrace is how long a request that changes state (every one but a
// read and a queue's leave) may still take to be answered after its
// context ended, so that its outcome is known rather than lost with the
// connection (a grant the caller can undo, a release that took effect).
// So the Engine's call returns at most settleGrace after its context's
// end, and that late only when the last server it tries does not answer
// (a stopped process): a ForceRelease with a 1 s context after 2 s; a
// distlock Client's release, whose context is the release timeout, after
// the release timeout plus settleGrace (6 s by default); an acquire the
// Client sends in flight (to its caller's deadline plus the release
// timeout: the caller itself returns at its deadline) settleGrace after
// the flight's end, in the background. A server tried before the last is
// cut at its share of the caller's time (attemptShare), which ends before
// the context does.
const settleGrace = time.Second

// maxBatch is the largest number of extensions sent in one request (the
// server's limit); larger batches are split.
const maxBatch = 1000

// Engine is a distlock server (or several servers of one backend) seen as
// a lock engine.
type Engine struct {
	servers []*srv
	cur     atomic.Int64 // index of the current server
	token   string
	hc      *http.Client
	ownsHC  bool

	oneOff oneOffs // see oneoff.go

	idMu     sync.Mutex
	pinned   bool   // backend is known
	backend  string // the backend of the first server vetted (see vet)
	pinnedBy string // that server

	bounds      atomic.Pointer[ttlBounds] // the servers' ttl bounds, once read (caps.go)
	releaseOnce atomic.Bool               // the servers honour a release's id, once read (caps.go)

	ctx    context.Context // ends the event streams on Close
	cancel context.CancelFunc
	mu     sync.Mutex
	hub    hubs // the subscriptions (subscribe.go)
	closed bool
	wg     sync.WaitGroup
}

var (
	_ engine.Engine         = (*Engine)(nil)
	_ engine.ForceReleaser  = (*Engine)(nil)
	_ engine.HolderReleaser = (*Engine)(nil)
	_ engine.Lister         = (*Engine)(nil)
	_ engine.Queuer         = (*Engine)(nil)
	_ engine.FenceRaiser    = (*Engine)(nil)
	_ engine.Sharer         = (*Engine)(nil)
)

// Option configures an Engine.
type Option func(*Engine)

// WithToken sends token as the bearer token of every request.
func WithToken(token string) Option { return func(e *Engine) { e.token = token } }

// WithHTTPClient uses hc for every request instead of a client of the
// Engine's own. Its timeout, if any, must be longer than the longest
// request (event streams stay open: leave Timeout zero and rely on
// contexts). Close does not close its idle connections.
func WithHTTPClient(hc *http.Client) Option {
	return func(e *Engine) { e.hc, e.ownsHC = hc, false }
}

// WithTLSConfig sets the TLS configuration of the Engine's own HTTP client
// (for a server with a private CA). It has no effect with WithHTTPClient.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(e *Engine) {
		if e.ownsHC {
			e.hc.Transport.(*http.Transport).TLSClientConfig = cfg
		}
	}
}

// New returns an engine for the server at serverURL (http:// or
// https://), or for several servers of one backend, their URLs separated
// by commas: requests go to one of them, and move on to the next when it
// stops answering (see Servers, and the package's notes on several
// servers). A URL that cannot be used is an error wrapping an
// *engine.ArgumentError. New does not contact the servers: see Ping.
func New(serverURL string, opts ...Option) (*Engine, error) {
	servers, err := parseServers(serverURL)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		servers: servers,
		hc:      &http.Client{Transport: newTransport()},
		ownsHC:  true,
	}
	for _, o := range opts {
		o(e)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.hub.init(e)
	return e, nil
}

// newTransport is the Engine's own transport: enough idle connections for
// many concurrent lock operations and event streams to one server.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 0, // waits are bounded by contexts
	}
}

// String names the engine by its servers, for error messages.
func (e *Engine) String() string { return "distlock server " + strings.Join(e.Servers(), ",") }

// acquire makes one attempt (Acquire, any kind): no waiting on the server.
func (e *Engine) acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	req := wire.AcquireBody(r) // engine.CheckKind has checked the kind fields
	// An attempt id makes a second copy of the request harmless: the
	// engine answers a repeated attempt as before, without a second hold.
	o := callOpts{how: retryUnsent, most: r.TTL / 3}
	if r.Attempt != "" {
		o.how = retryAlways
	}
	var out api.AcquireResponse
	err := e.call(ctx, o, "acquire", http.MethodPost, lockPath(r.Name, "acquire"), req, &out)
	var he *Error
	if errors.As(err, &he) && he.Code == api.CodeLocked {
		return lockedGrant(he.Detail), nil
	}
	if err != nil {
		return engine.Grant{}, err
	}
	if r.OneOff {
		e.oneOff.add(r.Name, r.Owner)
	}
	return engine.Grant{Acquired: true, Token: out.Token, Count: out.Count}, nil
}

// lockedGrant is the refusal a locked answer describes.
func lockedGrant(d api.ErrorDetail) engine.Grant {
	g := engine.Grant{Holder: d.Holder}
	if d.HolderTTLMs != nil {
		g.HolderTTL = time.Duration(*d.HolderTTLMs) * time.Millisecond
		if *d.HolderTTLMs < 0 {
			g.HolderTTL = -1
		}
	}
	if d.Holder == "" {
		// The server hides owner tokens from non-admins; a holder id
		// still tells holders apart.
		g.Holder = "holder:" + d.HolderID
	}
	if d.RetryMs > 0 {
		g.Retry = time.Duration(d.RetryMs) * time.Millisecond
	}
	g.Queued, g.Head, g.Reserved = d.Queued, d.Head, d.Reserved
	if g.Reserved {
		g.Holder = ""
	}
	return g
}

// Extend implements engine.Engine: one request for the whole batch (split
// in requests of at most 1000 extensions, sent concurrently).
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := make([]engine.ExtendResult, len(rs))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fails int
		first error
	)
	chunks := (len(rs) + maxBatch - 1) / maxBatch
	for c := 0; c < chunks; c++ {
		lo, hi := c*maxBatch, min((c+1)*maxBatch, len(rs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.extendChunk(ctx, rs[lo:hi], out[lo:hi])
			if err != nil {
				mu.Lock()
				fails++
				if first == nil {
					first = err
				}
				mu.Unlock()
				for i := lo; i < hi; i++ {
					out[i] = engine.ExtendResult{Err: err}
				}
			}
		}()
	}
	wg.Wait()
	if fails == chunks {
		return nil, first
	}
	return out, nil
}

func (e *Engine) extendChunk(ctx context.Context, rs []engine.ExtendRequest, out []engine.ExtendResult) error {
	req := api.ExtendBatchRequest{Locks: make([]api.ExtendRequest, len(rs))}
	for i, r := range rs {
		req.Locks[i] = wire.ExtendItem(r)
	}
	var resp api.ExtendBatchResponse
	if err := e.do(ctx, "extend", http.MethodPost, "/v1/extend", req, &resp); err != nil {
		return err
	}
	if len(resp.Results) != len(rs) {
		return fmt.Errorf("distlock server: extend: %d results for %d extensions", len(resp.Results), len(rs))
	}
	for i, r := range resp.Results {
		switch {
		case r.Error != nil:
			out[i].Err = &Error{Op: "extend", Status: http.StatusOK, Code: r.Error.Code, Message: r.Error.Message, Detail: *r.Error}
		case r.Status == api.StatusExtended:
			out[i] = engine.ExtendResult{Status: engine.Extended, Token: r.Token, Wake: r.Wake}
		case r.Status == api.StatusHeldByOther:
			out[i].Status = engine.HeldByOther
		case r.Status == api.StatusMissing:
			out[i].Status = engine.Missing
		default:
			out[i].Err = fmt.Errorf("distlock server: extend: unknown status %q", r.Status)
		}
	}
	return nil
}

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind: an unknown kind is refused before anything is
// sent); every kind is one request to the server's leave endpoint
// (wire.LeaveBody).
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leave, e.leave)
}

// leave is Leave's one path.
func (e *Engine) leave(ctx context.Context, r engine.LeaveRequest) error {
	return e.do(ctx, "leave", http.MethodPost, lockPath(r.Name, "leave"), wire.LeaveBody(r), nil)
}

// release drops one hold (Release, any kind).
func (e *Engine) release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.releaseWith(ctx, r, "")
}

// releaseWith is release with the release id id (api.ReleaseRequest.
// ReleaseID; "": none).
func (e *Engine) releaseWith(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	name, owner := r.Name, r.Owner
	holding := e.oneOff.take(name, owner)
	var out api.ReleaseResponse
	req := wire.ReleaseBody(r)
	req.ReleaseID = id
	err := e.call(ctx, callOpts{how: retryUnsent}, "release", http.MethodPost, lockPath(name, "release"), req, &out)
	if err != nil && len(e.servers) > 1 && failedOver(ctx, err, retryAlways) {
		return e.releaseUnknown(ctx, name, owner, r.Kind, holding, req, err)
	}
	return releaseResult(out, err)
}

// releaseUnknown settles a release whose outcome is unknown (err: its
// server did not answer), and which a second copy could make drop a second
// hold: it asks whether the owner still holds the lock (of kind). If not,
// the release took effect; if so and the owner holds once (holding is
// holdsOnce), it did not, and is sent again; otherwise err is the answer.
func (e *Engine) releaseUnknown(ctx context.Context, name, owner string, kind engine.Kind, holding ownerHolding, req api.ReleaseRequest, err error) (engine.ReleaseResult, error) {
	var out api.ReleaseResponse
	held, herr := e.holds(ctx, name, owner, kind)
	switch {
	case herr == nil && !held:
		return engine.ReleaseResult{Status: engine.Released}, nil
	case herr == nil && (holding == holdsOnce || req.ReleaseID != ""):
		err = e.do(ctx, "release", http.MethodPost, lockPath(name, "release"), req, &out)
		var he *Error
		if errors.As(err, &he) && he.Code == api.CodeNotHeld {
			// Held by the owner a moment ago: a copy of its own
			// release freed it since.
			return engine.ReleaseResult{Status: engine.Released}, nil
		}
	}
	return releaseResult(out, err)
}

// releaseResult is the release's result for the server's answer (out, or
// the error err).
func releaseResult(out api.ReleaseResponse, err error) (engine.ReleaseResult, error) {
	var he *Error
	if errors.As(err, &he) && he.Code == api.CodeNotHeld {
		if he.Detail.Status == api.StatusHeldByOther {
			return engine.ReleaseResult{Status: engine.NotOwner}, nil
		}
		return engine.ReleaseResult{Status: engine.NotHeld}, nil
	}
	if err != nil {
		return engine.ReleaseResult{}, err
	}
	return engine.ReleaseResult{Status: engine.Released, Remaining: out.Remaining}, nil
}

// holds reports whether owner holds name (a mutex, or with a shared kind
// a shared lock), read through the servers.
func (e *Engine) holds(ctx context.Context, name, owner string, kind engine.Kind) (bool, error) {
	view := api.KindMutex
	if kind.Shared() {
		view = "shared"
	}
	var out api.LockInfo
	if err := e.do(ctx, "inspect", http.MethodGet, lockPath(name, "")+"?kind="+view, nil, &out); err != nil {
		return false, err
	}
	id := api.HolderID(owner)
	if out.Held && (out.Owner == owner || out.HolderID == id) {
		return true, nil
	}
	for _, h := range out.Holders {
		if h.Owner == owner || h.HolderID == id {
			return true, nil
		}
	}
	return false, nil
}

// Inspect implements engine.Engine: GET /v1/locks/{name}, which describes
// the name whatever its kind. Holders' owner tokens are reported only when
// the token's role is admin (or the server has no tokens); otherwise a
// shared lock's holder is "holder:" and the holder's id.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	var out api.LockInfo
	if err := e.do(ctx, "inspect", http.MethodGet, lockPath(name, ""), nil, &out); err != nil {
		return engine.Info{}, err
	}
	return wire.Info(out), nil
}

// SetMetadata implements engine.MetadataSetter: POST
// /v1/locks/{name}/metadata, with r.Token as the body's token (the server
// passes it to its engine, which checks it where it keeps grant tokens).
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	var out api.MetadataResponse
	err := e.do(ctx, "metadata", http.MethodPost, lockPath(r.Name, "metadata"),
		api.MetadataRequest{Owner: r.Owner, Metadata: r.Metadata, Token: r.Token}, &out)
	var he *Error
	if errors.As(err, &he) && he.Code == api.CodeNotHeld {
		if he.Detail.Status == api.StatusHeldByOther {
			return engine.HeldByOther, nil
		}
		return engine.Missing, nil
	}
	if err != nil {
		return 0, err
	}
	return engine.Extended, nil
}

// RaiseFence implements engine.FenceRaiser: POST /v1/locks/{name}/fence
// (wire.FenceBody) for every kind, an unknown one refused before anything
// is sent (engine.RaiseByKind).
func (e *Engine) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return engine.RaiseByKind(ctx, r, e.raise, e.raise)
}

// raise is RaiseFence's one path.
func (e *Engine) raise(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	var out api.FenceResponse
	err := e.do(ctx, "fence", http.MethodPost, lockPath(r.Name, "fence"), wire.FenceBody(r), &out)
	return out.Raised, err
}

// ForceRelease implements engine.ForceReleaser (the token's role must be
// admin). Through a server that does not answer it returns up to
// settleGrace (1 s) after ctx's end.
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	// Sent again only when it never arrived: a second copy could free a
	// lock granted since to another holder.
	var out api.ForceReleaseResponse
	err := e.call(ctx, callOpts{how: retryUnsent}, "force-release", http.MethodDelete, lockPath(name, ""), nil, &out)
	return out.WasHeld, err
}

// ForceReleaseHolder implements engine.HolderReleaser (the token's role
// must be admin): DELETE with ?owner=; the server's not_held answer (owner
// holds nothing, nothing changed) is reported as false.
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	if owner == "" {
		return false, nil // nobody holds as "" (the server refuses an empty owner as bad input)
	}
	var out api.ForceReleaseResponse
	err := e.do(ctx, "force-release", http.MethodDelete, lockPath(name, "")+"?owner="+url.QueryEscape(owner), nil, &out)
	var re *Error
	if errors.As(err, &re) && re.Code == api.CodeNotHeld {
		return false, nil
	}
	return out.WasHeld, err
}

// List implements engine.Lister. A page the server's engine answered from
// some of its parts comes with an *engine.PartialError (engine.AsPartial).
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	q.Set("limit", strconv.Itoa(max(1, min(limit, 1000))))
	var out api.ListResponse
	if err := e.do(ctx, "list", http.MethodGet, "/v1/locks?"+q.Encode(), nil, &out); err != nil {
		return nil, "", err
	}
	infos := make([]engine.Info, len(out.Locks))
	for i, l := range out.Locks {
		infos[i] = wire.Info(l)
	}
	if p := wire.PartialOf(out.Partial); p != nil {
		return infos, out.Next, p // the page of the parts that answered
	}
	return infos, out.Next, nil
}

// Close implements engine.Engine: it ends the event streams and closes the
// idle connections of the Engine's own HTTP client.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.hub.Close() // waiters re-check and get ErrClosed
	e.cancel()
	e.wg.Wait()
	if e.ownsHC {
		e.hc.CloseIdleConnections()
	}
	return nil
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// lockPath is /v1/locks/{name}[/action], the name percent-encoded as one
// path segment.
func lockPath(name, action string) string {
	p := "/v1/locks/" + escapeName(name)
	if action != "" {
		p += "/" + action
	}
	return p
}

// escapeName percent-encodes a lock name as one path segment; "." and ".."
// are encoded too, so that no client or proxy takes them for path steps.
func escapeName(name string) string {
	s := url.PathEscape(name)
	if s == "." || s == ".." {
		s = strings.ReplaceAll(s, ".", "%2E")
	}
	return s
}
