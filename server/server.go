// Package server is the distlock lock server: an HTTP/JSON API under /v1, a
// live dashboard at / and Prometheus metrics at /metrics, on any engine.
//
// On the embedded engine (engine/memory) one server process is the lock
// authority, like a single Redis without persistence: its locks die with
// it. On Redis (engine/redis), Redlock (engine/quorum), etcd or PostgreSQL
// the server keeps no lock state of its own, so several servers can run
// side by side, and a client naming several of them (engine/remote) goes
// on through another when one stops answering.
//
// The API is the engine contract over HTTP: the endpoints call the server's
// engine directly (one engine operation per request), and the lease logic —
// renewal, loss, fencing checks — stays with the client. The Go client is
// distlock.New(remote.New(url)) (engine/remote); curl works too. See
// docs/API.md.
//
//	eng := memory.New()
//	srv, err := server.New(eng)
//	...
//	ln, _ := net.Listen("tcp", "127.0.0.1:7420")
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx) // waiters are answered shutting_down; then eng.Close()
package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/expiring"
	"github.com/distlock/distlock/internal/rules"
)

// Defaults of the server's limits.
const (
	// DefaultMaxWaiters bounds the waiting requests (held-open acquires and
	// release-event streams) of one server.
	DefaultMaxWaiters = 10000
	// DefaultMaxWaitersPerName bounds the waiting requests of one lock name.
	DefaultMaxWaitersPerName = 1000
	// DefaultMaxWait is the longest wait budget an acquire may ask for.
	DefaultMaxWait = 10 * time.Minute
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 1 << 20
	// MaxExtendBatch is the largest number of locks one POST /v1/extend
	// may carry.
	MaxExtendBatch = 1000
	// MaxAttemptLen bounds the attempt id of an acquire (rules.Attempt).
	MaxAttemptLen = rules.MaxAttemptLen
	// MaxListLimit is the largest page a listing returns.
	MaxListLimit = 1000
	// DefaultDashboardStreams bounds the dashboards watching at once.
	DefaultDashboardStreams = 64
	// DefaultHeaderTimeout bounds the reading of a request's headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the reading of a request's body.
	DefaultBodyTimeout = 10 * time.Second
	// DefaultIdleTimeout bounds how long a keep-alive connection waits for
	// its next request.
	DefaultIdleTimeout = 2 * time.Minute
)

// Timeouts bound what a client may take to send a request, so that no
// client, slow or malicious, holds a connection and its goroutine for
// longer: every request is answered, or its connection closed, within
// them. A waiting request (an acquire with a wait budget, an event stream)
// is held open beyond them once its request has arrived whole: its wait is
// bounded by the wait budget and the waiter limits instead.
type Timeouts struct {
	// Header bounds the reading of a request's headers, from its first
	// byte (http.Server.ReadHeaderTimeout; on HTTPS also the handshake).
	Header time.Duration
	// Body bounds the reading of a request's body, counted from the end of
	// its headers: a body that trickles in or never ends is answered
	// invalid_argument (HTTP 400) and the connection closed. The same bound
	// holds for a request refused before its body was read (unauthorized,
	// say): net/http reads the rest of the body before it answers, and
	// closes the connection instead when the body has not ended by then.
	Body time.Duration
	// Idle bounds how long a keep-alive connection waits for its next
	// request (http.Server.IdleTimeout).
	Idle time.Duration
}

// engineTimeout bounds the engine work of a request: every handler makes
// its engine calls on one engineContext (the request's values, detached
// from its cancellation, so that the server always knows their outcome: a
// grant made for a client that just left is released), so a request is
// answered within engineTimeout of its engine work's start, whatever the
// backend does (backend_unavailable when it did not answer); clean-up of a
// grant nobody will use goes on in the background, after the answer. A
// held-open acquire is bounded by its wait_ms instead: its attempts are
// abandoned at the wait's end (flightAcquire).
const engineTimeout = 10 * time.Second

// Version is reported by GET /v1/info and the dashboard.
var Version = "development"

// Server serves the lock API, the dashboard and the metrics of one engine.
// It does not own the engine: close the engine after Shutdown.
type Server struct {
	eng            engine.Engine
	once           engine.OnceReleaser // eng, when its releases apply once (api.ReleaseRequest.ReleaseID)
	engineName     string
	embedded       bool
	backendID      string        // GET /v1/info's backend
	owners         *rules.Owners // the owners, attempts and waiter ids it makes
	tokens         *Tokens
	public         bool
	tlsConfig      *tls.Config
	maxBody        int64
	maxWait        time.Duration
	timeouts       Timeouts
	limits         *limits
	registry       *prometheus.Registry // only until New: then metrics.gatherer
	metrics        *Metrics
	obs            *fanout
	timeline       *timeline
	holds          *holdTracker
	endedWaits     *endedWaits // held-open waits that ended with a grant
	elections      *electionBook
	watcher        *distlock.Client // observes elections (watch); closed at shutdown
	dash           *dashboardHub
	log            *slog.Logger
	handler        http.Handler
	metricsHandler http.Handler

	stopping chan struct{} // closed when shutdown begins
	stopOnce sync.Once
	bgStop   chan struct{} // closed when background work must end
	bgOnce   sync.Once
	bg       sync.WaitGroup
	// detached counts the engine calls a request left to finish after its
	// answer (detach): bounded by engineTimeout each; Shutdown waits for
	// them until its context ends.
	detached sync.WaitGroup

	mu      sync.Mutex
	servers []*http.Server
}

// Option configures a Server.
type Option func(*Server) error

// WithTokens turns on bearer-token authentication with the given tokens.
// Without it every request has the admin role, and Serve refuses a
// listener that is not on a loopback address (see WithInsecurePublic).
func WithTokens(t *Tokens) Option {
	return func(s *Server) error {
		if t == nil || t.Len() == 0 {
			return errors.New("server: WithTokens needs at least one token")
		}
		s.tokens = t
		return nil
	}
}

// WithInsecurePublic allows Serve on a non-loopback address without
// authentication: anyone who reaches the port can then take, release and
// force-release every lock.
func WithInsecurePublic() Option { return func(s *Server) error { s.public = true; return nil } }

// WithTLS makes Serve speak HTTPS with cfg (which must hold a certificate).
func WithTLS(cfg *tls.Config) Option {
	return func(s *Server) error {
		if cfg == nil || (len(cfg.Certificates) == 0 && cfg.GetCertificate == nil) {
			return errors.New("server: WithTLS needs a certificate")
		}
		s.tlsConfig = cfg
		return nil
	}
}

// WithMaxWaiters bounds the waiting requests (held-open acquires and
// release-event streams) in total and per lock name; beyond them the
// server answers too_many_waiters (HTTP 429). Defaults: 10000 and 1000.
func WithMaxWaiters(total, perName int) Option {
	return func(s *Server) error {
		if total < 1 || perName < 1 {
			return fmt.Errorf("server: waiter limits must be positive, got %d and %d", total, perName)
		}
		s.limits = newLimits(total, perName)
		return nil
	}
}

// WithMaxWait bounds the wait budget of one acquire (default 10m).
func WithMaxWait(d time.Duration) Option {
	return func(s *Server) error {
		if d <= 0 {
			return fmt.Errorf("server: max wait must be positive, got %v", d)
		}
		s.maxWait = d
		return nil
	}
}

// WithMaxBodyBytes bounds a request body (default 1 MiB); larger bodies are
// answered invalid_argument with HTTP 413.
func WithMaxBodyBytes(n int64) Option {
	return func(s *Server) error {
		if n < 1024 {
			return fmt.Errorf("server: body limit %d is below 1024 bytes", n)
		}
		s.maxBody = n
		return nil
	}
}

// WithTimeouts sets the bounds of Timeouts; a zero field keeps its default
// (DefaultHeaderTimeout, DefaultBodyTimeout, DefaultIdleTimeout). A
// negative one is refused with a *distlock.ArgumentError.
func WithTimeouts(t Timeouts) Option {
	return func(s *Server) error {
		if t.Header < 0 || t.Body < 0 || t.Idle < 0 {
			return &distlock.ArgumentError{Arg: "timeouts", Reason: fmt.Sprintf("must not be negative, got header %v, body %v, idle %v", t.Header, t.Body, t.Idle)}
		}
		if t.Header > 0 {
			s.timeouts.Header = t.Header
		}
		if t.Body > 0 {
			s.timeouts.Body = t.Body
		}
		if t.Idle > 0 {
			s.timeouts.Idle = t.Idle
		}
		return nil
	}
}

// WithRegistry registers the server's metrics on reg and serves reg at
// /metrics (default: a registry of the server's own, with the Go and
// process collectors).
func WithRegistry(reg *prometheus.Registry) Option {
	return func(s *Server) error { s.registry = reg; return nil }
}

// WithMetrics uses m (made with NewMetrics) for the server's metrics, and
// serves the registry m was registered on at /metrics. Make m first when
// the engine needs it, as a Redlock engine does for quorum.WithNodeErrors.
func WithMetrics(m *Metrics) Option {
	return func(s *Server) error {
		if m == nil || m.gatherer == nil {
			return errors.New("server: WithMetrics needs metrics made by NewMetrics on a prometheus.Registry")
		}
		s.metrics = m
		return nil
	}
}

// WithLogger sets the server's logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) error { s.log = l; return nil } }

// WithEngineName names the engine in /v1/info, the dashboard and the logs
// (default: the engine's String method, or "embedded").
func WithEngineName(name string) Option {
	return func(s *Server) error { s.engineName = name; return nil }
}

// WithBackendID declares the identity of the shared backend the server
// runs on (any name its operator picks: "redis-prod", say), which GET
// /v1/info reports as backend. Give every server on one backend the same
// id: a client that names several servers switches only between servers
// that report the same backend (engine/remote), so one pointed at another
// backend by mistake is refused rather than silently used. The embedded
// engine refuses it: its locks are its own process's (its backend is
// "embedded:" and an id of the process).
func WithBackendID(id string) Option {
	return func(s *Server) error {
		switch {
		case s.embedded:
			return &distlock.ArgumentError{Arg: "backend id", Reason: "the embedded engine's locks are this process's own: no other server shares them"}
		case id == "" || len(id) > 256 || strings.HasPrefix(id, embeddedBackend):
			return &distlock.ArgumentError{Arg: "backend id", Reason: fmt.Sprintf("%q: want 1 to 256 bytes, not starting with %q", id, embeddedBackend)}
		}
		s.backendID = id
		return nil
	}
}

// embeddedBackend begins the backend id of a server on the embedded engine.
const embeddedBackend = "embedded:"

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors, as the server's own default registry has.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// onceReleaser is eng as an engine.OnceReleaser, or nil.
func onceReleaser(eng engine.Engine) engine.OnceReleaser {
	o, _ := eng.(engine.OnceReleaser)
	return o
}

// New returns a server for eng.
func New(eng engine.Engine, opts ...Option) (*Server, error) {
	if eng == nil {
		return nil, errors.New("server: nil engine")
	}
	s := &Server{
		eng:      eng,
		once:     onceReleaser(eng),
		maxBody:  DefaultMaxBodyBytes,
		maxWait:  DefaultMaxWait,
		timeouts: Timeouts{Header: DefaultHeaderTimeout, Body: DefaultBodyTimeout, Idle: DefaultIdleTimeout},
		limits:   newLimits(DefaultMaxWaiters, DefaultMaxWaitersPerName),
		log:      slog.Default(),
		stopping: make(chan struct{}),
		bgStop:   make(chan struct{}),
	}
	s.embedded = engine.CapabilitiesOf(eng).Embedded
	s.owners = rules.NewOwners()
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if s.embedded {
		s.backendID = embeddedBackend + s.owners.Next()[:16]
	}
	if s.engineName == "" {
		s.engineName = "embedded"
		if st, ok := eng.(fmt.Stringer); ok && !s.embedded {
			s.engineName = st.String()
		}
	}
	if s.metrics == nil {
		if s.registry == nil {
			s.registry = NewRegistry()
		}
		m, err := NewMetrics(s.registry)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	m := s.metrics
	s.timeline = newTimeline(timelineBucket, timelineBuckets)
	s.dash = newDashboardHub(s, DefaultDashboardStreams)
	s.obs = &fanout{m: m, tl: s.timeline, changed: s.dash.changed}
	s.holds = newHoldTracker(s.obs)
	s.endedWaits = expiring.New[holdKey, string](maxEndedWaits)
	s.elections = newElectionBook()
	s.watcher = distlock.New(s.eng)
	s.metricsHandler = s.newMetricsHandler()
	s.handler = s.boundBodies(s.routes())
	s.bg.Add(1)
	go s.sweepHolds()
	return s, nil
}

// Metrics returns the server's Prometheus metrics: an Observer that Go
// clients in the same process may share (distlock.WithObserver), and the
// per-node error hook for a Redlock engine (quorum.WithNodeErrors).
func (s *Server) Metrics() *Metrics { return s.metrics }

// Observer returns the distlock.Observer that feeds the server's metrics
// and its dashboard's chart.
func (s *Server) Observer() distlock.Observer { return s.obs }

// Handler returns the server's HTTP handler, for use with a server of the
// caller's own. Call Close (or Shutdown) when done with it. The handler
// applies the body timeout (Timeouts.Body) itself; give that server a
// ReadHeaderTimeout and an IdleTimeout, as Serve does, and no WriteTimeout
// (it would cut waiting requests).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln until Shutdown or Close, and returns
// http.ErrServerClosed then. Without tokens it refuses a listener that is
// not on a loopback address, unless WithInsecurePublic.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.checkExposure(ln.Addr()); err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.timeouts.Header,
		IdleTimeout:       s.timeouts.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnContext:       withConn, // clientGone: see clientgone.go
	}
	s.mu.Lock()
	select {
	case <-s.stopping:
		s.mu.Unlock()
		return http.ErrServerClosed
	default:
	}
	s.servers = append(s.servers, hs)
	s.mu.Unlock()
	if s.tlsConfig != nil {
		cfg := s.tlsConfig.Clone()
		if len(cfg.NextProtos) == 0 {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		}
		hs.TLSConfig = cfg
		return hs.Serve(tls.NewListener(ln, cfg))
	}
	return hs.Serve(ln)
}

// checkExposure refuses to serve an open server beyond loopback.
func (s *Server) checkExposure(addr net.Addr) error {
	if s.tokens != nil || s.public {
		return nil
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("server: refusing to listen on %v without authentication: anyone who reaches it could take "+
		"and break every lock; give tokens (WithTokens, --tokens-file), listen on 127.0.0.1, or allow it explicitly "+
		"(WithInsecurePublic, --insecure-public)", addr)
}

// TLS reports whether Serve speaks HTTPS.
func (s *Server) TLS() bool { return s.tlsConfig != nil }

// EngineName names the engine the server runs on.
func (s *Server) EngineName() string { return s.engineName }

// Embedded reports whether the server runs on the embedded engine, whose
// locks live in this process and die with it: no other server shares them,
// and GET /v1/info says so (embedded, and a backend id of this process
// alone), so that a client naming several servers never switches to
// another one in their stead.
func (s *Server) Embedded() bool { return s.embedded }
