package remote

import (
	"context"
	"net/http"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/wire"
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

// LeaveShared implements engine.Sharer.
func (e *Engine) LeaveShared(ctx context.Context, name, waiter string) error {
	return e.do(ctx, "leave", http.MethodPost, lockPath(name, "leave"), api.LeaveRequest{Waiter: waiter, Shared: true}, nil)
}

// fromSharedInfo reads a shared lock's state.
func fromSharedInfo(l api.LockInfo) engine.Info {
	i := engine.Info{Name: l.Name, Held: l.Held, HighWater: l.HighWater, Waiters: l.Waiters, Token: l.Token, Limit: l.Limit, Partial: partialOf(l.Partial)}
	i.Kind, _ = wire.ParseKind(l.Kind)
	if i.Kind == engine.RWLock {
		i.Limit = engine.RWPermits
	}
	for _, h := range l.Holders {
		owner := h.Owner
		if owner == "" {
			owner = "holder:" + h.HolderID
		}
		ttl := time.Duration(h.TTLMs) * time.Millisecond
		if h.TTLMs < 0 {
			ttl = -1
		}
		i.Holders = append(i.Holders, engine.Holder{Owner: owner, Count: h.Count, Token: h.Token, TTL: ttl, Metadata: h.Metadata, Weight: h.Weight})
	}
	return i
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
