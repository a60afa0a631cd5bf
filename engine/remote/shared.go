package remote

import (
	"context"
	"net/http"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Shared locks (engine.Sharer) over the server's lock endpoints: the
// acquire's kind, limit, weight and mode fields, release, leave and extend
// with shared, GET /v1/locks/{name} (Inspect) and POST
// /v1/locks/{name}/limit. A server whose engine keeps no shared locks
// answers not_supported (errors.ErrUnsupported).

// SetLimit implements engine.Sharer.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	var out api.LimitResponse
	err := e.do(ctx, "limit", http.MethodPost, lockPath(name, "limit"), api.LimitRequest{Limit: limit}, &out)
	return out.Previous, err
}

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind): every kind is one request to the server's
// acquire endpoint (acquire).
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return engine.AcquireByKind(ctx, r, e.acquire, e.acquire)
}

// Release implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.ReleaseByKind): every kind is one request to the server's
// release endpoint (release).
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return engine.ReleaseByKind(ctx, r, e.release, e.release)
}
