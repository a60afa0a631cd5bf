package server

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// The routes. Lock names travel as one path segment, percent-encoded
// (url.PathEscape: a '/' in a name is %2F). The server routes on the
// escaped path itself, and never cleans it, so every valid lock name has a
// URL (net/http's ServeMux would redirect names like "a//b" or "..").
//
//	GET    /                           dashboard (static files, no token)
//	GET    /healthz                    liveness (no token)
//	GET    /metrics                    Prometheus (read)
//	GET    /v1/info                    engine, caller's role (read)
//	GET    /v1/waitfor                 wait-for graph and its cycles (read; waitfor.go)
//	GET    /v1/locks?prefix&cursor&limit  list (read)
//	POST   /v1/extend                  batch extend (write)
//	POST   /v1/sets/acquire            a set of locks, all or none, one attempt (write; sets.go)
//	POST   /v1/sets/release            release a set of locks (write)
//	GET    /v1/dashboard/events        dashboard stream (read)
//	GET    /v1/locks/{name}[?kind=K]   status (read)
//	DELETE /v1/locks/{name}[?owner=O]  force-release: every holder, or O's hold (admin)
//	POST   /v1/locks/{name}/acquire    acquire, waiting up to wait_ms (write)
//	POST   /v1/locks/{name}/extend     extend (write)
//	POST   /v1/locks/{name}/release    release (write)
//	POST   /v1/locks/{name}/fence      raise the fencing high-water (write)
//	GET    /v1/locks/{name}/events     release events, server-sent (write); ?waiter=ID: a queue's waiter
//	POST   /v1/locks/{name}/leave      a waiter leaves the lock's queue (write)
//	POST   /v1/locks/{name}/metadata   set a held lock's metadata in place (write)
//	POST   /v1/locks/{name}/limit      set a semaphore's limit (write); shared locks: see shared.go
//	...    /v1/elections/{name}[/...]  elections: see elections.go
//	...    /v1/latches/{name}[/...]    countdown latches: see latch.go
func (s *Server) routes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.EscapedPath()
		switch {
		case strings.HasPrefix(path, "/v1/locks/"):
			s.lockRoute(w, r, strings.TrimPrefix(path, "/v1/locks/"))
		case strings.HasPrefix(path, "/v1/elections/"):
			s.electionsRoute(w, r, strings.TrimPrefix(path, "/v1/elections/"))
		case strings.HasPrefix(path, "/v1/latches/"):
			s.latchesRoute(w, r, strings.TrimPrefix(path, "/v1/latches/"))
		case path == "/v1/locks":
			s.route(w, r, http.MethodGet, RoleRead, s.handleList, "prefix", "cursor", "limit")
		case path == "/v1/extend":
			s.route(w, r, http.MethodPost, RoleWrite, s.handleExtendBatch)
		case path == "/v1/sets/acquire":
			s.route(w, r, http.MethodPost, RoleWrite, s.handleSetAcquire)
		case path == "/v1/sets/release":
			s.route(w, r, http.MethodPost, RoleWrite, s.handleSetRelease)
		case path == "/v1/waitfor":
			s.route(w, r, http.MethodGet, RoleRead, s.handleWaitFor)
		case path == "/v1/info":
			s.route(w, r, http.MethodGet, RoleRead, s.handleInfo)
		case path == "/v1/dashboard/events":
			s.route(w, r, http.MethodGet, RoleRead, s.handleDashboardEvents)
		case path == "/metrics":
			s.route(w, r, http.MethodGet, RoleRead, s.handleMetrics)
		case path == "/healthz":
			s.route(w, r, http.MethodGet, RoleNone, s.handleHealth)
		case !strings.HasPrefix(path, "/v1/"):
			s.handleStatic(w, r, path)
		default:
			writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such endpoint: "+path+" (see docs/API.md)"))
		}
	})
}

// handlerFunc is a handler that knows the caller's role.
type handlerFunc func(w http.ResponseWriter, r *http.Request, role Role)

// route checks the method, the role and the query, then calls h. params
// are the query parameters the route takes (none unless given): any other,
// one given twice, or one that does not parse is refused before h runs
// (knownParams), on every route alike.
func (s *Server) route(w http.ResponseWriter, r *http.Request, method string, need Role, h handlerFunc, params ...string) {
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", method)
		writeError(w, newError(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, r.Method+" is not allowed here; use "+method))
		return
	}
	role := RoleAdmin
	if need > RoleNone {
		var ok bool
		if role, ok = s.authorize(w, r, need); !ok {
			return
		}
	}
	if e := knownParams(r, params...); e != nil {
		writeError(w, e)
		return
	}
	h(w, r, role)
}

// electionsRoute routes /v1/elections/{name}[/{action}]; rest is the
// escaped path after /v1/elections/.
func (s *Server) electionsRoute(w http.ResponseWriter, r *http.Request, rest string) {
	name, action, ok := splitNamed(w, rest)
	if ok {
		s.electionRoute(w, r, name, action)
	}
}

// splitNamed splits {name}[/{action}] (name percent-encoded); it answers
// the request itself when it cannot.
func splitNamed(w http.ResponseWriter, rest string) (name, action string, ok bool) {
	escName, action, _ := strings.Cut(rest, "/")
	name, err := url.PathUnescape(escName)
	if err != nil {
		writeError(w, badRequest("name", "invalid name: bad percent-encoding in the path"))
		return "", "", false
	}
	if strings.Contains(action, "/") {
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound,
			"no such endpoint; a '/' in a lock name must be percent-encoded as %2F"))
		return "", "", false
	}
	return name, action, true
}

// named makes a handler of h for the lock (or election) name, which it
// validates first.
func (s *Server) named(name string, h func(http.ResponseWriter, *http.Request, Role, string)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, role Role) {
		if e := s.validateName(name); e != nil {
			writeError(w, e)
			return
		}
		h(w, r, role, name)
	}
}

// lockRoute routes /v1/locks/{name}[/{action}]; rest is the escaped path
// after /v1/locks/.
func (s *Server) lockRoute(w http.ResponseWriter, r *http.Request, rest string) {
	name, action, ok := splitNamed(w, rest)
	if !ok {
		return
	}
	named := func(h func(http.ResponseWriter, *http.Request, Role, string)) handlerFunc { return s.named(name, h) }
	switch action {
	case "":
		switch r.Method {
		case http.MethodDelete:
			s.route(w, r, http.MethodDelete, RoleAdmin, named(s.handleForceRelease), "owner")
		default:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, DELETE")
				writeError(w, newError(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or DELETE"))
				return
			}
			s.route(w, r, http.MethodGet, RoleRead, named(s.handleStatus), "kind")
		}
	case "acquire":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleAcquire))
	case "extend":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleExtend))
	case "release":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleRelease))
	case "fence":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleFence))
	case "metadata":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleMetadata))
	case "leave":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleLeave))
	case "limit":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleSetLimit))
	case "events":
		s.route(w, r, http.MethodGet, RoleWrite, named(s.handleLockEvents), "waiter")
	default:
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such endpoint: /v1/locks/{name}/"+action))
	}
}

// handleHealth answers liveness probes.
func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request, _ Role) {
	status := "ok"
	code := http.StatusOK
	if s.isStopping() {
		status, code = "shutting_down", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]string{"status": status})
}

// handleInfo tells what the server runs on and the caller's role.
func (s *Server) handleInfo(w http.ResponseWriter, _ *http.Request, role Role) {
	caps := engine.CapabilitiesOf(s.eng)
	writeJSON(w, http.StatusOK, api.InfoResponse{Engine: s.engineName, Role: role.String(), Auth: s.tokens != nil, Version: Version,
		Embedded: s.embedded, Backend: s.backendID,
		MinTTLMs: caps.MinTTL.Milliseconds(), TTLGranularityMs: caps.TTLGranularity.Milliseconds(), ReleaseOnce: s.once != nil})
}
