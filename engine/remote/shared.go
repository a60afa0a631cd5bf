package remote

import (
	"context"
	"errors"
	"fmt"
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

// ReleaseOnce implements engine.OnceReleaser: Release with the id id,
// which the server passes to its engine's ReleaseOnce, so a copy (a Client
// resending a release whose answer was lost) drops no second hold. When
// the servers do not honour a release's id (api.InfoResponse.ReleaseOnce,
// read before a server's first use), or the server's engine cannot release
// r's kind once (a shared lock on a PostgreSQL schema before version 20),
// the answer is an error matching errors.ErrUnsupported and nothing was
// dropped.
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if id == "" || !e.releaseOnce.Load() {
		return engine.ReleaseResult{}, fmt.Errorf("remote: the servers cannot release once: %w", errors.ErrUnsupported)
	}
	with := func(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
		return e.releaseWith(ctx, r, id)
	}
	return engine.ReleaseByKind(ctx, r, with, with)
}
