package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

// DefaultListLimit is the page size of a listing unless limit says.
const DefaultListLimit = 100

// maxCursorLen bounds a listing's cursor: an engine's cursor (a lock name
// on some engines) and a lock name (listPage).
const maxCursorLen = 4096

// handleList serves GET /v1/locks?prefix=&cursor=&limit=.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request, role Role) {
	q := r.URL.Query()
	prefix, cursor := q.Get("prefix"), q.Get("cursor")
	limit := DefaultListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			writeError(w, badRequest("limit", fmt.Sprintf("invalid limit: want 1 to %d, got %q", MaxListLimit, v)))
			return
		}
		limit = n
	}
	if len(prefix) > distlock.MaxNameLen || !utf8.ValidString(prefix) {
		writeError(w, badRequest("prefix", fmt.Sprintf("invalid prefix: at most %d bytes of UTF-8", distlock.MaxNameLen)))
		return
	}
	if len(cursor) > maxCursorLen {
		writeError(w, badRequest("cursor", "invalid cursor: too long"))
		return
	}
	lister, ok := s.eng.(engine.Lister)
	if !ok {
		writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, "this server's engine cannot list locks"))
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	infos, next, err := listPage(ctx, s.eng, lister, prefix, cursor, limit)
	if errors.Is(err, errBadCursor) {
		writeError(w, badRequest("cursor", "invalid cursor: "+err.Error()))
		return
	}
	p, partial := engine.AsPartial(err)
	if err != nil && !partial {
		writeError(w, engineErr("list", err))
		return
	}
	out := api.ListResponse{Locks: make([]api.LockInfo, 0, len(infos)), Next: next, Partial: wire.Partial(p)}
	for _, i := range infos {
		out.Locks = append(out.Locks, lockInfo(i, role))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleMetrics serves /metrics in the Prometheus text format.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, _ Role) {
	s.metricsHandler.ServeHTTP(w, r)
}

func (s *Server) newMetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.gatherer, promhttp.HandlerOpts{MaxRequestsInFlight: 4})
}
