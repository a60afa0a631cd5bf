package server

import (
	"net/http"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Countdown latches (engine.Latcher) over HTTP:
//
//	GET  /v1/latches/{name}            the count (read)
//	POST /v1/latches/{name}/set        set the count when it is zero (write)
//	POST /v1/latches/{name}/countdown  take one off, once per call id (write)
//
// A latch's waiters wait on GET /v1/locks/{name}/events (a latch shares its
// name's wake-ups): the engine wakes them when the count reaches zero. A
// server whose engine keeps no latches answers not_supported.

// latchesRoute routes /v1/latches/{name}[/{action}]; rest is the escaped
// path after /v1/latches/.
func (s *Server) latchesRoute(w http.ResponseWriter, r *http.Request, rest string) {
	name, action, ok := splitNamed(w, rest)
	if !ok {
		return
	}
	method, need, h := http.MethodPost, RoleWrite, s.handleLatchSet
	switch action {
	case "":
		method, need, h = http.MethodGet, RoleRead, s.handleLatchCount
	case "set":
	case "countdown":
		h = s.handleLatchCountDown
	default:
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such endpoint: /v1/latches/{name}/"+action))
		return
	}
	s.route(w, r, method, need, s.named(name, h))
}

// latcher returns the engine's latches, or the not_supported answer.
func (s *Server) latcher(op string) (engine.Latcher, *apiError) {
	lt, ok := s.eng.(engine.Latcher)
	if !ok {
		return nil, newError(http.StatusNotImplemented, api.CodeNotSupported, op+": this server's engine keeps no countdown latches")
	}
	return lt, nil
}

// handleLatchCount serves GET /v1/latches/{name}.
func (s *Server) handleLatchCount(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	lt, e := s.latcher("latch")
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	n, err := lt.Count(ctx, name)
	if err != nil {
		writeError(w, engineErr("latch", err))
		return
	}
	writeJSON(w, http.StatusOK, api.LatchResponse{Name: name, Count: n})
}

// handleLatchSet serves POST /v1/latches/{name}/set.
func (s *Server) handleLatchSet(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.LatchSetRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if err := engine.CheckLatchCount(req.Count); err != nil {
		writeError(w, engineErr("latch set", err))
		return
	}
	lt, e := s.latcher("latch set")
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	set, err := lt.SetCount(ctx, name, req.Count)
	if err != nil {
		writeError(w, engineErr("latch set", err))
		return
	}
	writeJSON(w, http.StatusOK, api.LatchSetResponse{Name: name, Set: set})
}

// handleLatchCountDown serves POST /v1/latches/{name}/countdown.
func (s *Server) handleLatchCountDown(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.LatchCountDownRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.ID == "" {
		writeError(w, badRequest("id", "invalid id: empty"))
		return
	}
	if e := argErr("id", distlock.ValidateOwner(req.ID)); e != nil { // an id is an owner token's size
		writeError(w, e)
		return
	}
	lt, e := s.latcher("latch count down")
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	n, err := lt.CountDown(ctx, name, req.ID)
	if err != nil {
		writeError(w, engineErr("latch count down", err))
		return
	}
	writeJSON(w, http.StatusOK, api.LatchResponse{Name: name, Count: n})
}
