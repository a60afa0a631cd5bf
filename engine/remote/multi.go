package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

var (
	_ engine.MultiAcquirer = (*Engine)(nil)
	_ engine.MultiReleaser = (*Engine)(nil)
)

// AcquireMulti implements engine.MultiAcquirer: one request, POST
// /v1/sets/acquire, which the server carries out as one AcquireMulti of
// its own engine. A server whose engine cannot (no sets, or names it
// cannot take at once), or a server without the endpoint (an older
// version), is engine.ErrNotAtomic: the Client takes the names one by
// one. The request goes on to another server only when it was surely not
// sent (a copy could be refused by its own first grant); when its outcome
// is unknown the error says so, and the Client releases the names.
func (e *Engine) AcquireMulti(ctx context.Context, rs []engine.AcquireRequest) (engine.MultiGrant, error) {
	if err := engine.CheckSet(rs); err != nil {
		return engine.MultiGrant{}, err
	}
	if len(rs) == 0 {
		return engine.MultiGrant{Acquired: true}, nil
	}
	req := api.SetAcquireRequest{Locks: make([]api.SetLock, len(rs))}
	for i, r := range rs {
		req.Locks[i] = wire.SetLockBody(r)
	}
	var out api.SetAcquireResponse
	err := e.call(ctx, callOpts{how: retryUnsent, most: rs[0].TTL / 3}, "acquire set", http.MethodPost, "/v1/sets/acquire", req, &out)
	var he *Error
	switch {
	case errors.As(err, &he) && (he.Code == api.CodeNotAtomic || he.Code == api.CodeNotFound):
		return engine.MultiGrant{}, fmt.Errorf("%w: %w", engine.ErrNotAtomic, err)
	case errors.As(err, &he) && he.Code == api.CodeLocked:
		for i, r := range rs {
			if r.Name == he.Detail.Name {
				return engine.MultiGrant{Blocked: i, Grant: lockedGrant(he.Detail)}, nil
			}
		}
		return engine.MultiGrant{}, fmt.Errorf("distlock server: acquire set: refused by %q, not in the set", he.Detail.Name)
	case err != nil:
		return engine.MultiGrant{}, err
	}
	if len(out.Locks) != len(rs) {
		return engine.MultiGrant{}, fmt.Errorf("distlock server: acquire set: %d grants for %d locks", len(out.Locks), len(rs))
	}
	tokens := make([]uint64, len(rs))
	for i, g := range out.Locks {
		if g.Name != rs[i].Name {
			return engine.MultiGrant{}, fmt.Errorf("distlock server: acquire set: grant %d is of %q, not %q", i, g.Name, rs[i].Name)
		}
		tokens[i] = g.Token
	}
	for _, r := range rs {
		if r.OneOff {
			e.oneOff.add(r.Name, r.Owner)
		}
	}
	return engine.MultiGrant{Acquired: true, Tokens: tokens}, nil
}

// ReleaseMulti implements engine.MultiReleaser: one request, POST
// /v1/sets/release (one ReleaseMulti of the server's engine where it has
// one). A server without the endpoint gets one release request per name.
func (e *Engine) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	if err := engine.CheckReleaseSet(rs); err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, nil
	}
	req := api.SetReleaseRequest{Locks: make([]api.SetOwner, len(rs))}
	holding := make([]ownerHolding, len(rs))
	for i, r := range rs {
		req.Locks[i] = api.SetOwner{Name: r.Name, Owner: r.Owner, Token: r.Token}
		holding[i] = e.oneOff.take(r.Name, r.Owner)
	}
	var out api.SetReleaseResponse
	err := e.call(ctx, callOpts{how: retryUnsent}, "release set", http.MethodPost, "/v1/sets/release", req, &out)
	if err != nil && len(e.servers) > 1 && failedOver(ctx, err, retryAlways) {
		// The outcome is unknown (the server did not answer: a stopped
		// process may still carry the releases out, or never): settle
		// each name as a single release of unknown outcome, through the
		// next server, so that the names are not left held until their
		// ttl while another server answers.
		unknown := err
		res := make([]engine.ReleaseResult, len(rs))
		for i, r := range rs {
			if res[i], err = e.releaseUnknown(ctx, r.Name, r.Owner, engine.Mutex, holding[i], wire.ReleaseBody(r), unknown); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	var he *Error
	if errors.As(err, &he) && he.Code == api.CodeNotFound {
		res := make([]engine.ReleaseResult, len(rs))
		for i, r := range rs {
			if res[i], err = e.Release(ctx, r); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	if len(out.Results) != len(rs) {
		return nil, fmt.Errorf("distlock server: release set: %d results for %d locks", len(out.Results), len(rs))
	}
	res := make([]engine.ReleaseResult, len(rs))
	for i, r := range out.Results {
		switch r.Status {
		case api.StatusReleased:
			res[i] = engine.ReleaseResult{Status: engine.Released, Remaining: r.Remaining}
		case api.StatusHeldByOther:
			res[i].Status = engine.NotOwner
		case api.StatusMissing:
			res[i].Status = engine.NotHeld
		case api.StatusOtherKind:
			return nil, &engine.ArgumentError{Arg: fmt.Sprintf("names[%d]", i), Reason: r.Reason}
		default:
			return nil, fmt.Errorf("distlock server: release set: unknown status %q", r.Status)
		}
	}
	return res, nil
}
