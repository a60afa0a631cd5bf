package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
	"github.com/distlock/distlock/server/api"
)

// Shared locks (engine.Sharer: semaphores and reader-writer locks) share
// the lock endpoints with the mutex, and the name space:
//
//	POST /v1/locks/{name}/acquire   kind, limit, weight, mode in the body
//	POST /v1/locks/{name}/release   shared: true
//	POST /v1/locks/{name}/leave     shared: true
//	POST /v1/extend                 items with shared: true
//	POST /v1/locks/{name}/limit     set a semaphore's stored limit
//	GET  /v1/locks/{name}?kind=shared  the holders (kind=mutex: the mutex;
//	                                   neither: whichever the name is)
//
// Listings and the dashboard take shared locks from the engine's own
// listing (engine.Lister lists every kind), so every server on one backend
// shows the same locks.

// sharedSpec is a shared acquire's kind, limit and weight.
type sharedSpec struct {
	kind          engine.Kind
	limit, weight int
}

// sharedFrom reads the shared-lock fields of an acquire: nil for a mutex.
func sharedFrom(req api.AcquireRequest) (*sharedSpec, *apiError) {
	switch req.Kind {
	case "", api.KindMutex:
		switch {
		case req.Limit != 0:
			return nil, badRequest("limit", "invalid limit: a limit is for kind semaphore")
		case req.Weight != 0:
			return nil, badRequest("weight", "invalid weight: a weight is for kind semaphore")
		case req.Mode != "":
			return nil, badRequest("mode", "invalid mode: a mode is for kind rwlock")
		}
		return nil, nil
	case api.KindSemaphore:
		weight := req.Weight
		if weight == 0 {
			weight = 1 // the default
		}
		if e := argErr("limit", rules.Limit(req.Limit)); e != nil {
			return nil, e
		}
		if e := argErr("weight", rules.Weight(weight)); e != nil {
			// (the engine checks it against the stored limit)
			return nil, e
		}
		if req.Mode != "" {
			return nil, badRequest("mode", "invalid mode: a mode is for kind rwlock")
		}
		return &sharedSpec{kind: engine.Semaphore, limit: req.Limit, weight: weight}, nil
	case api.KindRWLock:
		sh := &sharedSpec{kind: engine.RWLock, limit: engine.RWPermits, weight: 1}
		switch {
		case req.Limit != 0:
			return nil, badRequest("limit", "invalid limit: a limit is for kind semaphore")
		case req.Weight != 0:
			return nil, badRequest("weight", "invalid weight: a reader-writer lock takes a mode (read or write), not a weight")
		case req.Mode == api.ModeWrite:
			sh.weight = engine.RWPermits
		case req.Mode != "" && req.Mode != api.ModeRead:
			return nil, badRequest("mode", fmt.Sprintf("invalid mode: %q is not read or write", req.Mode))
		}
		return sh, nil
	}
	return nil, badRequest("kind", fmt.Sprintf("invalid kind: %q is not mutex, semaphore or rwlock", req.Kind))
}

// sharer returns the server's engine as an engine.Sharer, or the
// not_supported answer for op.
func (s *Server) sharer(op string) (engine.Sharer, *apiError) {
	sh, ok := s.eng.(engine.Sharer)
	if !ok {
		return nil, newError(http.StatusNotImplemented, api.CodeNotSupported, op+": this server's engine keeps no shared locks (semaphores, reader-writer locks)")
	}
	return sh, nil
}

// handleSetLimit serves POST /v1/locks/{name}/limit (engine.Sharer.SetLimit).
func (s *Server) handleSetLimit(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.LimitRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := argErr("limit", rules.Limit(req.Limit)); e != nil {
		writeError(w, e)
		return
	}
	sh, e := s.sharer("limit")
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	prev, err := sh.SetLimit(ctx, name, req.Limit)
	if err != nil {
		writeError(w, engineErr("limit", err))
		return
	}
	s.obs.changed()
	writeJSON(w, http.StatusOK, api.LimitResponse{Name: name, Limit: req.Limit, Previous: prev})
}

// inspectAny answers GET /v1/locks/{name}: the engine's Inspect, which
// describes the name whatever its kind (""); kind "mutex" narrows it to
// the mutex, "shared" to the shared lock (engine.Info.MutexView, SharedView).
func (s *Server) inspectAny(ctx context.Context, name, kind string) (engine.Info, *apiError) {
	if kind == "shared" {
		if _, e := s.sharer("inspect"); e != nil {
			return engine.Info{}, e
		}
	}
	info, err := s.eng.Inspect(ctx, name)
	if err != nil {
		return info, engineErr("inspect", err)
	}
	switch kind {
	case "shared":
		info = info.SharedView()
	case api.KindMutex:
		info = info.MutexView()
	}
	return info, nil
}
